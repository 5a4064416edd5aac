// Picture 1: every step of every rank as a stacked bar. Heights share one scale across ranks;
// warm-up, outlier and lost steps are marked; the straggler rank is named. Each segment is an
// SVG rect carrying its figures (data-*), so a test can read what was drawn.
import { CAUSES, Cause, RankBars, StepBar, StepViewData, Host } from "./data";
import { svg, svgText, Tooltip, el } from "./dom";
import { ms } from "./format";

export const PARTS: { key: string; label: string; colour: string }[] = [
  { key: "compute", label: "GPU compute", colour: "#4e79a7" },
  { key: "comm", label: "communication (moving data)", colour: "#59a14f" },
  { key: "commWait", label: "communication (waiting for other ranks)", colour: "#8cd17d" },
  { key: "copy", label: "copies and memsets", colour: "#76b7b2" },
  { key: "launch", label: "idle: launch overhead", colour: "#f28e2b" },
  { key: "sync", label: "idle: host-device sync", colour: "#e15759" },
  { key: "input", label: "idle: input pipeline", colour: "#edc948" },
  { key: "host", label: "idle: other host work", colour: "#b07aa1" },
  { key: "compile", label: "idle: torch.compile compiling", colour: "#9c755f" },
];

export function partValue(s: StepBar, key: string): number {
  switch (key) {
    case "compute":
      return s.computeNs;
    case "comm":
      return s.commNs - s.commWaitNs;
    case "commWait":
      return s.commWaitNs;
    case "copy":
      return s.copyNs;
    default:
      return s.idleNs[key as Cause] ?? 0;
  }
}

// The line a segment stands for: its cause's costliest line for idle time, else the line that
// launched most of the step's GPU time.
function lineOf(data: StepViewData, s: StepBar, key: string): number {
  if ((CAUSES as string[]).includes(key)) {
    const lines = data.causeLines?.[key as Cause];
    if (lines && lines.length > 0) return lines[0];
  }
  return s.topLine;
}

// Steps of a rank, in groups of `per` when there are more bars than pixels (mean of each part).
function grouped(rank: RankBars, per: number): { first: number; last: number; bar: StepBar; kinds: Set<string> }[] {
  const out = [];
  for (let i = 0; i < rank.steps.length; i += per) {
    const chunk = rank.steps.slice(i, i + per);
    const mean = (f: (s: StepBar) => number) => chunk.reduce((a, s) => a + f(s), 0) / chunk.length;
    const idle = {} as Record<Cause, number>;
    for (const c of CAUSES) idle[c] = mean((s) => s.idleNs[c] ?? 0);
    const bar: StepBar = {
      index: chunk[0].index,
      kind: chunk.every((s) => s.kind === "steady") ? "steady" : chunk[0].kind,
      startNs: chunk[0].startNs,
      wallNs: mean((s) => s.wallNs),
      computeNs: mean((s) => s.computeNs),
      commNs: mean((s) => s.commNs),
      commWaitNs: mean((s) => s.commWaitNs),
      copyNs: mean((s) => s.copyNs),
      idleNs: idle,
      topLine: chunk[0].topLine,
      captureNs: mean((s) => s.captureNs ?? 0),
    };
    out.push({ first: chunk[0].index, last: chunk[chunk.length - 1].index, bar, kinds: new Set(chunk.map((s) => s.kind)) });
  }
  return out;
}

export function stepsChart(data: StepViewData, host: Host, tip: Tooltip, width: number): HTMLElement {
  const section = el("section", { class: "sl-section", id: "sl-steps" }, [el("h2", {}, ["Steps"])]);
  if (data.ranks.length === 0) {
    section.append(el("p", { class: "sl-note" }, ["No steps were found in this profile."]));
    return section;
  }
  const rowH = 170, top = 18, left = 64, right = 12, labelH = 34;
  const plotW = Math.max(200, width - left - right);
  const maxSteps = Math.max(...data.ranks.map((r) => r.steps.length));
  const per = Math.max(1, Math.ceil(maxSteps / Math.floor(plotW / 3)));
  // One scale for every rank. A warm-up or outlier step far longer than the steady ones (a
  // first step that compiles) is cut at the top and labelled, so the steady bars stay readable.
  const allMax = Math.max(1, ...data.ranks.flatMap((r) => r.steps.map((s) => s.wallNs)));
  const steadyMax = Math.max(0, ...data.ranks.flatMap((r) => r.steps.filter((s) => s.kind === "steady").map((s) => s.wallNs)));
  const maxWall = steadyMax > 0 && allMax > 1.5 * steadyMax ? steadyMax * 1.25 : allMax;
  const height = data.ranks.length * (rowH + labelH) + top;
  const root = svg("svg", {
    class: "sl-chart sl-steps",
    width,
    height,
    viewBox: `0 0 ${width} ${height}`,
    role: "img",
    "aria-label": "Every step as a stacked bar of GPU compute, communication, copies and GPU idle by cause",
  });
  data.ranks.forEach((rank, r) => {
    const y0 = top + r * (rowH + labelH) + labelH;
    const scale = (rowH - 8) / maxWall;
    const label = rank.label + (rank.straggler ? "  ⚠ straggler: the others wait for it" : "") +
      `  ·  median step ${ms(rank.medianWallNs)}`;
    root.append(svgText(left, y0 - 18, label, { class: rank.straggler ? "sl-rank sl-straggler" : "sl-rank" }));
    // Axis: 0 and the largest wall.
    root.append(svg("line", { x1: left, x2: left + plotW, y1: y0 + rowH, y2: y0 + rowH, class: "sl-axis" }));
    root.append(svgText(left - 4, y0 + rowH, "0", { class: "sl-tick", "text-anchor": "end" }));
    root.append(svgText(left - 4, y0 + rowH - maxWall * scale + 8, ms(maxWall), { class: "sl-tick", "text-anchor": "end" }));
    root.append(svgText(left - 4, y0 + rowH - (maxWall * scale) / 2 + 4, ms(maxWall / 2), { class: "sl-tick", "text-anchor": "end" }));
    if (data.unprofiledWallNs > 0) {
      const y = y0 + rowH - data.unprofiledWallNs * scale;
      root.append(svg("line", { x1: left, x2: left + plotW, y1: y, y2: y, class: "sl-unprofiled" }));
    }
    const groups = grouped(rank, per);
    const slot = plotW / Math.max(1, groups.length);
    const barW = Math.max(1, Math.min(40, slot * 0.8));
    groups.forEach((g, i) => {
      const x = left + i * slot + (slot - barW) / 2;
      const steps = g.first === g.last ? `${g.first}` : `${g.first}-${g.last}`;
      const bar = svg("g", {
        class: `sl-bar sl-${g.bar.kind}`,
        "data-rank": rank.label,
        "data-steps": steps,
        "data-kind": g.bar.kind,
        "data-wall-ns": Math.round(g.bar.wallNs),
        "data-capture-ns": Math.round(g.bar.captureNs ?? 0),
        tabindex: 0,
        role: "button",
        "aria-label": `${rank.label} step ${steps} (${g.bar.kind}): ${ms(g.bar.wallNs)}`,
      });
      let y = y0 + rowH;
      const yTop = y0 + rowH - maxWall * scale;
      let clipped = false;
      for (const part of PARTS) {
        const v = partValue(g.bar, part.key);
        if (v <= 0) continue;
        let h = v * scale;
        if (y - h < yTop - 0.5) {
          h = Math.max(0, y - yTop);
          clipped = true;
        }
        y -= h;
        const line = lineOf(data, g.bar, part.key);
        const where = line >= 0 ? `${data.lines[line].path}:${data.lines[line].line}` : "";
        const rect = svg("rect", {
          x, y, width: barW, height: h, fill: part.colour,
          class: "sl-seg",
          "data-part": part.key,
          "data-ns": Math.round(v),
          "data-line": line,
          "data-where": where,
          "data-clipped": clipped ? "true" : "false",
        });
        rect.addEventListener("mousemove", (e) => {
          const m = e as MouseEvent;
          // The server gives at most what the step holds beyond its GPU work (the report's "at most").
          const capture = (g.bar.captureNs ?? 0) > 0 ? [`the profiler's own host work in it: at most ${ms(g.bar.captureNs)}` +
            (data.unprofiledWallNs > 0 ? " (the dashed line is the step without the profiler)" : "")] : [];
          tip.show([`${rank.label} · step ${steps} (${g.bar.kind})`, `${part.label}: ${ms(v)} of ${ms(g.bar.wallNs)}`,
            where ? `line: ${where}` : "no line", ...capture], m.clientX, m.clientY);
        });
        rect.addEventListener("mouseleave", () => tip.hide());
        rect.addEventListener("click", (e) => {
          e.stopPropagation();
          if (line >= 0) host.openLine(data.lines[line].path, data.lines[line].line);
        });
        bar.append(rect);
      }
      if (clipped) {
        bar.setAttribute("data-clipped", "true");
        bar.append(svgText(x + barW / 2, yTop - 4, `↑ ${ms(g.bar.wallNs)}`, { class: "sl-tick", "text-anchor": "middle" }));
        y = yTop - 12;
      }
      if (g.bar.kind !== "steady" || g.kinds.size > 1) {
        const mark = g.bar.kind === "warm-up" ? "W" : g.bar.kind === "outlier" ? "O" : g.bar.kind === "lost" ? "L" : "*";
        bar.append(svgText(x + barW / 2, y - 3, mark, { class: "sl-mark", "text-anchor": "middle" }));
      }
      bar.addEventListener("keydown", (e) => {
        const k = e as KeyboardEvent;
        if ((k.key === "Enter" || k.key === " ") && g.bar.topLine >= 0) {
          const l = data.lines[g.bar.topLine];
          host.openLine(l.path, l.line);
        }
      });
      root.append(bar);
    });
  });
  section.append(root);
  const legend = el("div", { class: "sl-legend" });
  for (const p of PARTS) {
    const sw = el("span", { class: "sl-swatch" });
    sw.style.background = p.colour;
    legend.append(el("span", { class: "sl-legend-item" }, [sw, p.label]));
  }
  legend.append(el("span", { class: "sl-legend-item" }, ["W warm-up · O outlier · L lost records"]));
  if (data.unprofiledWallNs > 0)
    legend.append(el("span", { class: "sl-legend-item" }, [`- - - the step without the profiler ≈ ${ms(data.unprofiledWallNs)}`]));
  section.append(legend);
  if (data.captureOverheadNs > 0)
    section.append(el("p", { class: "sl-note" }, [
      `The capture itself added about ${ms(data.captureOverheadNs)} of host time per steady step; ` +
      `without the profiler the step would take about ${ms(data.unprofiledWallNs)} (dashed line).`]));
  return section;
}
