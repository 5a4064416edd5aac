// Picture 2: one representative steady step as a timeline: the Python thread's lines as a
// lane, each GPU stream as a lane with its work coloured by the line that launched it, and GPU
// idle gaps coloured and labelled by cause. Drawn on a canvas, only what is visible: spans
// under a pixel share the pixel (the first one's colour). Wheel or +/- zooms, drag or the
// arrow keys pan, 0 resets.
import { Host, StepViewData, Timeline } from "./data";
import { el, lineColour, Tooltip } from "./dom";
import { ms } from "./format";
import { PARTS } from "./steps_chart";

const LANE_H = 22, GAP_H = 16, LABEL_W = 150, AXIS_H = 18;

function causeColour(cause: string): string {
  return PARTS.find((p) => p.key === cause)?.colour ?? "#999";
}

export function timelineChart(data: StepViewData, host: Host, tip: Tooltip, width: number): HTMLElement {
  const section = el("section", { class: "sl-section", id: "sl-timeline" }, [el("h2", {}, ["A steady step"])]);
  if (data.timelines.length === 0) {
    section.append(el("p", { class: "sl-note" }, ["No steady step to show."]));
    return section;
  }
  const body = el("div");
  const show = (i: number) => body.replaceChildren(...drawTimeline(data, data.timelines[i], host, tip, width));
  if (data.timelines.length > 1) {
    // A rank per timeline: the straggler's step beside the others'.
    const straggler = new Set(data.ranks.filter((r) => r.straggler).map((r) => r.label));
    const select = el("select", { "aria-label": "Rank" });
    data.timelines.forEach((t, i) =>
      select.append(el("option", { value: i }, [t.rank + (straggler.has(t.rank) ? " (straggler)" : "")])));
    select.addEventListener("change", () => show(Number(select.value)));
    section.append(el("label", { class: "sl-note" }, ["Rank ", select]));
  }
  section.append(body);
  show(0);
  return section;
}

function drawTimeline(data: StepViewData, t: Timeline, host: Host, tip: Tooltip, width: number): Node[] {
  const nodes: Node[] = [];
  nodes.push(el("p", { class: "sl-note" }, [
    `${t.rank}, step ${t.step}: ${ms(t.wallNs)} on the GPU (the step closest to the median). ` +
    "Wheel or +/− to zoom, drag or ←/→ to pan, 0 to reset; click a span to open its line."]));
  const rows = t.lanes.length + 1;
  const height = AXIS_H + rows * LANE_H + GAP_H;
  const canvas = el("canvas", { class: "sl-timeline", tabindex: 0, role: "img",
    "aria-label": `Timeline of ${t.rank} step ${t.step}` }) as HTMLCanvasElement;
  const ratio = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  const controls = el("div", { class: "sl-controls" });
  const button = (label: string, title: string, f: () => void) => {
    const b = el("button", { type: "button", title }, [label]);
    b.addEventListener("click", f);
    controls.append(b);
  };
  let view0 = 0, view1 = Math.max(1, t.endNs);
  const plotW = width - LABEL_W;
  const xOf = (ns: number) => LABEL_W + ((ns - view0) / (view1 - view0)) * plotW;
  const nsOf = (x: number) => view0 + ((x - LABEL_W) / plotW) * (view1 - view0);
  const zoom = (factor: number, at: number) => {
    const span = Math.max(1000, (view1 - view0) * factor);
    view0 = Math.max(0, at - (at - view0) * (span / (view1 - view0)));
    view1 = Math.min(t.endNs, view0 + span);
    if (view1 - view0 < span) view0 = Math.max(0, view1 - span);
    draw();
  };
  const pan = (ns: number) => {
    const span = view1 - view0;
    view0 = Math.min(Math.max(0, view0 + ns), Math.max(0, t.endNs - span));
    view1 = view0 + span;
    draw();
  };
  button("+", "zoom in", () => zoom(0.5, (view0 + view1) / 2));
  button("−", "zoom out", () => zoom(2, (view0 + view1) / 2));
  button("reset", "show the whole step", () => { view0 = 0; view1 = Math.max(1, t.endNs); draw(); });
  const style = getComputedStyle(document.body);
  const fg = () => style.getPropertyValue("--sl-fg").trim() || "#222";

  function draw(): void {
    const ctx = canvas.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.font = "11px sans-serif";
    ctx.fillStyle = fg();
    ctx.textBaseline = "middle";
    // Axis: a few round ticks.
    const span = view1 - view0;
    const step = Math.pow(10, Math.floor(Math.log10(span / 5)));
    const tick = span / step > 25 ? step * 5 : span / step > 10 ? step * 2 : step;
    for (let v = Math.ceil(view0 / tick) * tick; v <= view1; v += tick) {
      const x = xOf(v);
      ctx.fillRect(x, AXIS_H - 4, 1, 4);
      ctx.fillText(ms(v), x + 2, AXIS_H / 2);
    }
    t.lanes.forEach((lane, i) => {
      const y = AXIS_H + i * LANE_H;
      ctx.fillStyle = fg();
      ctx.fillText(lane.name.length > 24 ? lane.name.slice(0, 23) + "…" : lane.name, 4, y + LANE_H / 2);
      drawSpans(ctx, t, i, y);
    });
    // GPU idle, by cause.
    const gy = AXIS_H + t.lanes.length * LANE_H;
    ctx.fillStyle = fg();
    ctx.fillText("GPU idle", 4, gy + LANE_H / 2);
    for (const g of t.gaps) {
      if (g[1] < view0 || g[0] > view1) continue;
      const x0 = Math.max(LABEL_W, xOf(g[0])), x1 = Math.min(width, xOf(g[1]));
      ctx.fillStyle = causeColour(g[2]);
      ctx.fillRect(x0, gy + 3, Math.max(1, x1 - x0), LANE_H - 6);
      if (x1 - x0 > 60) {
        ctx.fillStyle = "#000";
        ctx.fillText(`${g[2]} ${ms(g[1] - g[0])}`, x0 + 3, gy + LANE_H / 2);
      }
    }
    // The GPU window's start.
    ctx.fillStyle = fg();
    const wx = xOf(t.gpuStartNs);
    if (wx >= LABEL_W) ctx.fillRect(wx, AXIS_H, 1, rows * LANE_H);
  }

  function drawSpans(ctx: CanvasRenderingContext2D, tl: Timeline, laneIndex: number, y: number): void {
    const spans = tl.lanes[laneIndex].spans;
    // The first span that may be visible (spans of a lane are in time order).
    let lo = 0, hi = spans.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (spans[mid][1] < view0) lo = mid + 1; else hi = mid;
    }
    let lastPixel = -1;
    for (let k = lo; k < spans.length && spans[k][0] <= view1; ++k) {
      const s = spans[k];
      const x0 = Math.max(LABEL_W, xOf(s[0])), x1 = xOf(s[1]);
      const px = Math.floor(x0);
      if (x1 - x0 < 1 && px === lastPixel) continue;  // this pixel is drawn already
      lastPixel = Math.floor(Math.max(x0, x1 - 1));
      ctx.fillStyle = lineColour(s[2]);
      ctx.fillRect(x0, y + 2, Math.max(1, x1 - x0), LANE_H - 4);
    }
  }

  function spanAt(x: number, y: number): { lane: number; span?: [number, number, number, number]; gap?: [number, number, string, number] } | null {
    const row = Math.floor((y - AXIS_H) / LANE_H);
    if (row < 0 || x < LABEL_W) return null;
    const at = nsOf(x);
    const slack = ((view1 - view0) / plotW) * 2;  // two pixels
    if (row === t.lanes.length) {
      const gap = t.gaps.find((g) => g[0] - slack <= at && at <= g[1] + slack);
      return gap ? { lane: row, gap } : null;
    }
    if (row > t.lanes.length) return null;
    const spans = t.lanes[row].spans;
    let best: [number, number, number, number] | undefined;
    for (const s of spans) if (s[0] - slack <= at && at <= s[1] + slack) { best = s; break; }
    return best ? { lane: row, span: best } : null;
  }

  const lineText = (line: number) => line >= 0 ? `${data.lines[line].path}:${data.lines[line].line}` : "no line";
  canvas.addEventListener("mousemove", (e) => {
    if (dragging !== null) return;
    const r = canvas.getBoundingClientRect();
    const hit = spanAt(e.clientX - r.left, e.clientY - r.top);
    if (!hit) return tip.hide();
    if (hit.gap) {
      tip.show([`GPU idle: ${hit.gap[2]}`, ms(hit.gap[1] - hit.gap[0]), lineText(hit.gap[3])], e.clientX, e.clientY);
    } else if (hit.span) {
      const s = hit.span;
      tip.show([t.names[s[3]] || lineText(s[2]), `${ms(s[1] - s[0])} at ${ms(s[0])}`, lineText(s[2])], e.clientX, e.clientY);
    }
  });
  canvas.addEventListener("mouseleave", () => tip.hide());
  let dragging: number | null = null, moved = false;
  canvas.addEventListener("mousedown", (e) => { dragging = e.clientX; moved = false; });
  window.addEventListener("mouseup", () => { dragging = null; });
  canvas.addEventListener("mousemove", (e) => {
    if (dragging === null) return;
    const dx = e.clientX - dragging;
    if (Math.abs(dx) > 2) moved = true;
    dragging = e.clientX;
    pan((-dx / plotW) * (view1 - view0));
  });
  canvas.addEventListener("click", (e) => {
    if (moved) return;
    const r = canvas.getBoundingClientRect();
    const hit = spanAt(e.clientX - r.left, e.clientY - r.top);
    const line = hit?.span ? hit.span[2] : hit?.gap ? hit.gap[3] : -1;
    if (line >= 0) host.openLine(data.lines[line].path, data.lines[line].line);
  });
  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    const r = canvas.getBoundingClientRect();
    zoom(e.deltaY > 0 ? 1.25 : 0.8, nsOf(e.clientX - r.left));
  }, { passive: false });
  canvas.addEventListener("keydown", (e) => {
    const span = view1 - view0;
    if (e.key === "+" || e.key === "=") zoom(0.5, (view0 + view1) / 2);
    else if (e.key === "-") zoom(2, (view0 + view1) / 2);
    else if (e.key === "ArrowLeft") pan(-span / 4);
    else if (e.key === "ArrowRight") pan(span / 4);
    else if (e.key === "0") { view0 = 0; view1 = Math.max(1, t.endNs); draw(); }
    else return;
    e.preventDefault();
  });
  nodes.push(controls, canvas);
  const merged = t.lanes.reduce((a, l) => a + l.merged, 0);
  if (merged > 0)
    nodes.push(el("p", { class: "sl-note" }, [`${merged} spans were merged with neighbours of the same line to keep the timeline light.`]));
  requestAnimationFrame(draw);
  draw();
  return nodes;
}
