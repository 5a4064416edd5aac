// Picture 3: GPU memory over the recorded steps: allocated and reserved, the peak marked, and
// the lines holding the peak as bands of one column beside it.
import { Host, StepViewData } from "./data";
import { el, lineColour, svg, svgText, Tooltip } from "./dom";
import { basename, bytes, ms } from "./format";

export function memoryChart(data: StepViewData, host: Host, tip: Tooltip, width: number): HTMLElement | null {
  const m = data.memory;
  if (!m || m.series.length === 0) return null;
  const section = el("section", { class: "sl-section", id: "sl-memory" }, [el("h2", {}, ["GPU memory"])]);
  const height = 200, left = 70, bandW = 70, top = 10, bottom = 20;
  const plotW = Math.max(100, width - left - bandW - 24);
  const t1 = Math.max(1, m.series[m.series.length - 1].t);
  // A long set-up before the first recorded step (building the model) is left out of view: the
  // steps are what the picture is for.
  let t0 = 0;
  if (m.steps.length > 0 && m.steps[0] > 0.3 * t1) {
    const mean = m.steps.length > 1 ? (m.steps[m.steps.length - 1] - m.steps[0]) / (m.steps.length - 1) : (t1 - m.steps[0]);
    t0 = Math.max(0, m.steps[0] - mean);
  }
  const series = m.series.filter((p) => p.t >= t0);
  const maxB = Math.max(1, m.peakReservedBytes, ...m.series.map((p) => Math.max(p.allocated, p.reserved)));
  const x = (t: number) => left + ((t - t0) / Math.max(1, t1 - t0)) * plotW;
  const y = (b: number) => top + (1 - b / maxB) * (height - top - bottom);
  const root = svg("svg", { class: "sl-chart sl-memory", width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": `GPU memory: peak ${bytes(m.peakAllocatedBytes)} allocated` });
  const path = (f: (p: { allocated: number; reserved: number }) => number) =>
    series.map((p, i) => `${i === 0 ? "M" : "L"}${x(p.t).toFixed(1)},${y(f(p)).toFixed(1)}`).join("");
  root.append(svg("path", { d: path((p) => p.reserved), class: "sl-reserved" }));
  root.append(svg("path", { d: path((p) => p.allocated), class: "sl-allocated" }));
  // Step ticks, thinned to one per 6 px at most: 2,000 steps would grey the whole chart.
  const ticks = m.steps.filter((t) => t >= t0);
  const every = Math.max(1, Math.ceil(ticks.length / Math.max(1, plotW / 6)));
  ticks.forEach((s, i) => {
    if (i % every === 0) root.append(svg("line", { x1: x(s), x2: x(s), y1: top, y2: height - bottom, class: "sl-step-tick" }));
  });
  root.append(svgText(left - 4, y(maxB) + 8, bytes(maxB), { class: "sl-tick", "text-anchor": "end" }));
  root.append(svgText(left - 4, y(0), "0", { class: "sl-tick", "text-anchor": "end" }));
  const px = x(m.peakTimeNs), py = y(m.peakAllocatedBytes);
  root.append(svg("circle", { cx: px, cy: py, r: 4, class: "sl-peak" }));
  root.append(svgText(Math.min(px + 6, left + plotW - 120), py - 6, `peak ${bytes(m.peakAllocatedBytes)}`, { class: "sl-tick" }));
  // The allocation that ran out of memory, marked where it happened, with what it asked.
  if (m.oom) {
    const ox = x(Math.max(t0, m.oom.timeNs));
    const at = m.oom.line >= 0 ? data.lines[m.oom.line] : undefined;
    const where = at ? ` at ${basename(at.path)}:${at.line}` : "";
    const text = `out of memory${where}: asked ${bytes(m.oom.requestedBytes)}, ${bytes(m.oom.freeBytes)} free`;
    const mark = svg("line", { x1: ox, x2: ox, y1: top, y2: height - bottom, class: "sl-oom", id: "sl-oom",
      "data-requested": m.oom.requestedBytes, "data-free": m.oom.freeBytes, "data-line": m.oom.line });
    root.append(mark);
    root.append(svgText(Math.max(left + 4, Math.min(ox - 6, left + plotW - 4)), top + 12, text,
      { class: "sl-tick sl-oom-label", "text-anchor": "end" }));
    if (at) mark.addEventListener("click", () => host.openLine(at.path, at.line));
  }
  // The lines holding the peak, as bands of one column.
  const bx = left + plotW + 16;
  let by = y(0);
  for (const band of m.top) {
    const l = data.lines[band.line];
    if (!l) continue;
    const h = (band.bytes / maxB) * (height - top - bottom);
    by -= h;
    const r = svg("rect", { x: bx, y: by, width: bandW - 20, height: Math.max(1, h), fill: lineColour(band.line),
      class: "sl-band", "data-line": band.line, "data-bytes": band.bytes });
    r.addEventListener("mousemove", (e) => {
      const me = e as MouseEvent;
      tip.show([`${basename(l.path)}:${l.line}`, `${bytes(band.bytes)} alive at the peak`], me.clientX, me.clientY);
    });
    r.addEventListener("mouseleave", () => tip.hide());
    r.addEventListener("click", () => host.openLine(l.path, l.line));
    root.append(r);
    if (h >= 11)
      root.append(svgText(bx + bandW - 16, by + h / 2 + 4, `:${l.line}`, { class: "sl-tick" }));
  }
  section.append(root);
  if (m.oom) {
    // The failing allocation's call chain, file:line on every frame, outermost first.
    const chain = m.oom.chain.map((i) => (i >= 0 && data.lines[i] ? `${basename(data.lines[i].path)}:${data.lines[i].line}` : "?"));
    section.append(el("p", { class: "sl-oom-chain", id: "sl-oom-chain" }, [
      `Out of memory: asked ${bytes(m.oom.requestedBytes)} with ${bytes(m.oom.freeBytes)} free` +
      (chain.length ? `; called from ${chain.join(" → ")}` : "")]));
  }
  section.append(el("p", { class: "sl-note" }, [
    `Allocated (solid) and reserved (dashed) over ${ms(t1 - t0)}${t0 > 0 ? ` (the ${ms(t0)} before the steps left out)` : ""}; ` +
    (every > 1 ? `a tick per ${every} steps; ` : "ticks mark steps; ") +
    "the column holds the lines with the most bytes alive at the peak."]));
  return section;
}
