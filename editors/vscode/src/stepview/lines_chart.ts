// Picture 4: the costliest lines as bars: inclusive time (everything beneath the line) behind
// the line's own time, each split into forward and backward. Picture 3 (memory) is memory.ts.
import { Host, StepViewData } from "./data";
import { el, svg, svgText, Tooltip } from "./dom";
import { basename, kindsText, ms } from "./format";

export function linesChart(data: StepViewData, host: Host, tip: Tooltip, width: number): HTMLElement {
  const per = data.steadySteps > 0 ? " per step" : " (totals)";
  const section = el("section", { class: "sl-section", id: "sl-lines" }, [el("h2", {}, ["Top lines" + per])]);
  const lines = data.topLines.map((i) => ({ i, l: data.lines[i] })).filter((x) => x.l);
  if (lines.length === 0) {
    section.append(el("p", { class: "sl-note" }, ["No GPU time was put on lines."]));
    return section;
  }
  const rowH = 20, labelW = Math.min(260, width * 0.35), right = 90;
  const plotW = Math.max(100, width - labelW - right);
  const max = Math.max(1, ...lines.map((x) => Math.max(x.l.inclusiveNs, x.l.selfNs)));
  const height = lines.length * rowH + 4;
  const root = svg("svg", { class: "sl-chart sl-lines", width, height, viewBox: `0 0 ${width} ${height}`,
    role: "list", "aria-label": "The costliest lines" });
  lines.forEach(({ i, l }, k) => {
    const y = k * rowH + 2;
    const g = svg("g", { class: "sl-line-bar", tabindex: 0, role: "listitem", "data-line": i,
      "data-self-ns": Math.round(l.selfNs), "data-inclusive-ns": Math.round(l.inclusiveNs),
      "aria-label": `${l.path}:${l.line}: ${ms(l.selfNs)} itself, ${ms(l.inclusiveNs)} with what it calls` });
    g.append(svgText(labelW - 6, y + rowH / 2 + 4, `${basename(l.path)}:${l.line}`, { class: "sl-label", "text-anchor": "end" }));
    const scale = plotW / max;
    const incl = Math.max(l.inclusiveNs, l.selfNs);
    g.append(svg("rect", { x: labelW, y: y + 2, width: Math.max(1, incl * scale), height: rowH - 4, class: "sl-inclusive" }));
    const fwd = l.selfNs > 0 ? l.forwardNs : 0, bwd = l.selfNs > 0 ? l.backwardNs : 0;
    const other = Math.max(0, l.selfNs - fwd - bwd);
    let x = labelW;
    for (const [v, cls] of [[fwd, "sl-fwd"], [bwd, "sl-bwd"], [other, "sl-self"]] as [number, string][]) {
      if (v <= 0) continue;
      g.append(svg("rect", { x, y: y + 5, width: Math.max(1, v * scale), height: rowH - 10, class: cls }));
      x += v * scale;
    }
    g.append(svgText(labelW + incl * scale + 4, y + rowH / 2 + 4, ms(incl), { class: "sl-tick" }));
    g.addEventListener("mousemove", (e) => {
      const m = e as MouseEvent;
      tip.show([`${l.path}:${l.line}`, `itself ${ms(l.selfNs)} (forward ${ms(l.forwardNs)}, backward ${ms(l.backwardNs)})`,
        `with what it calls ${ms(l.inclusiveNs)}`, l.idleNs > 0 ? `GPU idle charged here ${ms(l.idleNs)}` : "",
        l.kinds && l.kinds.length >= 2 ? `by kind: ${kindsText(l.kinds)}` : ""].filter(Boolean),
        m.clientX, m.clientY);
    });
    g.addEventListener("mouseleave", () => tip.hide());
    const open = () => host.openLine(l.path, l.line);
    g.addEventListener("click", open);
    g.addEventListener("keydown", (e) => {
      const k2 = (e as KeyboardEvent).key;
      if (k2 === "Enter" || k2 === " ") open();
    });
    root.append(g);
  });
  section.append(root);
  const legend = el("div", { class: "sl-legend" });
  for (const [cls, label] of [["sl-fwd", "forward"], ["sl-bwd", "backward"], ["sl-self", "itself, other"], ["sl-inclusive", "with what it calls"]]) {
    legend.append(el("span", { class: "sl-legend-item" }, [el("span", { class: `sl-swatch ${cls}` }), label]));
  }
  section.append(legend);
  return section;
}
