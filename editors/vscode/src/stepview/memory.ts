// Picture 3: GPU memory over the recorded steps, stacked by line: the lines holding the most at
// the peak as bands of their own (bottom up, most first), everything else as "other", reserved
// dashed above; the peak and the out-of-memory event marked; a column beside it with the lines
// at the peak. Zoom: the whole run, the peak's step (sampled finer by the server), or any step
// clicked on the step strip under the chart. A band opens its line.
import { Host, MemoryPoint, StepViewData } from "./data";
import { el, lineColour, svg, svgText, Tooltip } from "./dom";
import { basename, formatBytes, ms } from "./format";

interface Range {
  t0: number;
  t1: number;
  label: string;
  fine: boolean; // the peak's step in its finer samples
}

export function memoryChart(data: StepViewData, host: Host, tip: Tooltip, width: number): HTMLElement | null {
  const m = data.memory;
  if (!m || m.series.length === 0) return null;
  const section = el("section", { class: "sl-section", id: "sl-memory" }, [el("h2", {}, ["GPU memory"])]);
  // To the last sample, or the out-of-memory event after it (a sample is its run's most).
  const tEnd = Math.max(1, m.series[m.series.length - 1].t, m.oom ? m.oom.timeNs : 0);
  // A long set-up before the first recorded step (building the model) is left out of the whole
  // run's view: the steps are what the picture is for.
  let tStart = 0;
  if (m.steps.length > 0 && m.steps[0] > 0.3 * tEnd) {
    const mean = m.steps.length > 1 ? (m.steps[m.steps.length - 1] - m.steps[0]) / (m.steps.length - 1) : (tEnd - m.steps[0]);
    tStart = Math.max(0, m.steps[0] - mean);
  }
  const whole: Range = { t0: tStart, t1: tEnd, label: "the whole run", fine: false };
  const stepBounds = (t: number): [number, number] => {
    const starts = [0, ...m.steps];
    let i = starts.length - 1;
    while (i > 0 && starts[i] > t) i--;
    return [starts[i], i + 1 < starts.length ? starts[i + 1] : tEnd];
  };
  const peakStep = (): Range => {
    const fineSeries = m.stepSeries ?? [];
    if (fineSeries.length > 1) return { t0: fineSeries[0].t, t1: fineSeries[fineSeries.length - 1].t, label: "the peak's step", fine: true };
    const [a, b] = stepBounds(m.peakTimeNs);
    return { t0: a, t1: b, label: "the peak's step", fine: false };
  };
  const controls = el("div", { class: "sl-controls" });
  const wholeButton = el("button", { type: "button", id: "sl-memory-whole" }, ["Whole run"]);
  const stepButton = el("button", { type: "button", id: "sl-memory-peak-step" }, ["The peak's step"]);
  controls.append(wholeButton, stepButton);
  const holder = el("div", {});
  const whyNot = el("p", { class: "sl-note", id: "sl-memory-zoom-note" });
  const note = el("p", { class: "sl-note", id: "sl-memory-note" });
  // Which band is which line, most at the peak first.
  const legend = el("div", { class: "sl-legend", id: "sl-memory-legend" });
  for (const lineIndex of m.bands ?? []) {
    const l = data.lines[lineIndex];
    if (!l) continue;
    const item = el("span", { class: "sl-legend-item" }, [el("span", { class: "sl-swatch" }), `${basename(l.path)}:${l.line} ${formatBytes(l.memoryPeakBytes)}`]);
    (item.firstChild as HTMLElement).style.background = lineColour(lineIndex);
    item.style.cursor = "pointer";
    item.addEventListener("click", () => host.openLine(l.path, l.line));
    legend.append(item);
  }
  const other = el("span", { class: "sl-legend-item" }, [el("span", { class: "sl-swatch" }), "other lines and none"]);
  (other.firstChild as HTMLElement).style.background = "#bdbdbd";
  legend.append(other);
  section.append(controls, holder, whyNot, legend);
  // A step is drawn zoomed from the whole run's samples only where they are many in it: each
  // sample is the most of a run of events, and a run longer than a step hides the other steps'
  // highs (the peak's step alone is sampled finer by the server).
  const kMinSamples = 40;
  const samplesIn = (a: number, b: number) => m.series.filter((p) => p.t >= a && p.t < b).length;
  const draw = (range: Range) => {
    whyNot.textContent = "";
    holder.replaceChildren(chart(data, host, tip, width, range, range === whole, (t) => {
      const [a, b] = stepBounds(t);
      const pk = peakStep();
      if (pk.fine && t >= pk.t0 && t <= pk.t1) return draw(pk);
      if (samplesIn(a, b) >= kMinSamples) return draw({ t0: a, t1: b, label: "a step", fine: false });
      whyNot.textContent = `That step holds ${samplesIn(a, b)} of the run's ${m.series.length} samples, each the most of ` +
        "a run of events: too few to draw it as it was. The peak's step is kept in detail.";
    }));
    note.textContent = `${range === whole ? "The whole run" : `Zoomed into ${range.label}`}: ${ms(range.t1 - range.t0)}` +
      (range === whole && tStart > 0 ? ` (the ${ms(tStart)} before the steps left out)` : "") +
      (range === whole && m.steps.length > 0 ? `, ${m.steps.length + 1} steps as the allocations tell them (the first and last may be partial)` : "") +
      ". Bands: the lines holding the most at the peak, bottom up, and the rest (grey); reserved dashed. Click a band to open its line" +
      (range === whole ? ", the strip under the chart to zoom into a step." : ".");
  };
  wholeButton.addEventListener("click", () => draw(whole));
  stepButton.addEventListener("click", () => draw(peakStep()));
  draw(whole);
  if (m.oom) {
    // The failing allocation's call chain, file:line on every frame, outermost first.
    const chain = m.oom.chain.map((i) => (i >= 0 && data.lines[i] ? `${basename(data.lines[i].path)}:${data.lines[i].line}` : "?"));
    section.append(el("p", { class: "sl-oom-chain", id: "sl-oom-chain" }, [
      `Out of memory: asked ${formatBytes(m.oom.requestedBytes)} with ${formatBytes(m.oom.freeBytes)} free` +
      (chain.length ? `; called from ${chain.join(" → ")}` : "")]));
  }
  section.append(note);
  return section;
}

function chart(data: StepViewData, host: Host, tip: Tooltip, width: number, range: Range, zoomable: boolean,
  zoomAt: (t: number) => void): SVGElement {
  const m = data.memory!;
  const height = 232, left = 70, colW = 70, top = 22, strip = 14, bottom = 20 + strip;  // labels above the plot
  const plotW = Math.max(100, width - left - colW - 24);
  const plotH = height - top - bottom;
  const source: MemoryPoint[] = range.fine ? (m.stepSeries ?? []) : m.series;
  // The samples in view, and one either side so that the bands reach the edges.
  let lo = source.findIndex((p) => p.t >= range.t0);
  if (lo < 0) lo = source.length - 1;
  let hi = source.length - 1;
  while (hi > lo && source[hi].t > range.t1) hi--;
  const points = source.slice(Math.max(0, lo - 1), Math.min(source.length, hi + 2));
  const span = Math.max(1, range.t1 - range.t0);
  const x = (t: number) => left + Math.min(1, Math.max(0, (t - range.t0) / span)) * plotW;
  const maxB = Math.max(1, m.peakReservedBytes, ...points.map((p) => Math.max(p.allocated, p.reserved)));
  const y = (b: number) => top + (1 - b / maxB) * plotH;
  const bandLines = m.bands ?? [];
  const peakIndex = points.findIndex((p) => p.t === m.peakTimeNs && p.allocated === m.peakAllocatedBytes);
  const root = svg("svg", { class: "sl-chart sl-memory", width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": `GPU memory: peak ${formatBytes(m.peakAllocatedBytes)} allocated`, "data-max-bytes": maxB,
    "data-plot-height": plotH, "data-peak-x": peakIndex >= 0 ? x(points[peakIndex].t).toFixed(1) : "" });
  // Stacked areas: each band from the sum of those below it to that sum plus its bytes; "other"
  // up to the allocated total.
  const below = points.map(() => 0);
  const area = (tops: number[], bottoms: number[]) =>
    points.map((p, i) => `${i === 0 ? "M" : "L"}${x(p.t).toFixed(1)},${y(tops[i]).toFixed(1)}`).join("") +
    points.map((p, i) => i).reverse().map((i) => `L${x(points[i].t).toFixed(1)},${y(bottoms[i]).toFixed(1)}`).join("") + "Z";
  const nearest = (clientX: number) => {
    const box = root.getBoundingClientRect();
    const t = range.t0 + ((clientX - box.left - left) / plotW) * span;
    let best = 0;
    points.forEach((p, i) => { if (Math.abs(p.t - t) < Math.abs(points[best].t - t)) best = i; });
    return points[best];
  };
  bandLines.forEach((lineIndex, b) => {
    const l = data.lines[lineIndex];
    const tops = points.map((p, i) => below[i] + (p.bands?.[b] ?? 0));
    const path = svg("path", { d: area(tops, below), fill: lineColour(lineIndex), class: "sl-mem-band",
      "data-line": lineIndex, "data-path": l ? l.path : "", "data-line-no": l ? l.line : 0,
      "data-peak-bytes": peakIndex >= 0 ? (points[peakIndex].bands?.[b] ?? 0) : "" });
    path.addEventListener("mousemove", (e) => {
      const me = e as MouseEvent;
      const p = nearest(me.clientX);
      tip.show([l ? `${basename(l.path)}:${l.line}` : "?", `${formatBytes(p.bands?.[b] ?? 0)} alive at ${ms(p.t)}`,
        `${formatBytes(l ? l.memoryPeakBytes : 0)} at the peak`], me.clientX, me.clientY);
    });
    path.addEventListener("mouseleave", () => tip.hide());
    if (l) path.addEventListener("click", () => host.openLine(l.path, l.line));
    root.append(path);
    tops.forEach((v, i) => { below[i] = v; });
  });
  const other = svg("path", { d: area(points.map((p) => Math.max(p.allocated, 0)), below), class: "sl-mem-other" });
  other.addEventListener("mousemove", (e) => {
    const me = e as MouseEvent;
    const p = nearest(me.clientX);
    const held = (p.bands ?? []).reduce((a, v) => a + v, 0);
    tip.show(["other lines and none", `${formatBytes(p.allocated - held)} of ${formatBytes(p.allocated)} at ${ms(p.t)}`], me.clientX, me.clientY);
  });
  other.addEventListener("mouseleave", () => tip.hide());
  root.append(other);
  const line = (f: (p: MemoryPoint) => number) =>
    points.map((p, i) => `${i === 0 ? "M" : "L"}${x(p.t).toFixed(1)},${y(f(p)).toFixed(1)}`).join("");
  root.append(svg("path", { d: line((p) => p.allocated), class: "sl-allocated" }));
  if (points.some((p) => p.reserved > 0)) root.append(svg("path", { d: line((p) => p.reserved), class: "sl-reserved" }));
  // Step ticks, thinned to one per 6 px at most (2,000 steps would grey the whole chart), and
  // the strip under the chart: a click zooms into the step there.
  // Through the plot where they are few, on the strip alone where many.
  const ticks = m.steps.filter((t) => t >= range.t0 && t <= range.t1);
  const every = Math.max(1, Math.ceil(ticks.length / Math.max(1, plotW / 6)));
  const stripY = top + plotH + 2;
  const stripRect = svg("rect", { x: left, y: stripY, width: plotW, height: strip - 4, class: "sl-step-strip", id: "sl-memory-strip" });
  root.append(stripRect);
  const onStrip = ticks.length > plotW / 40;
  ticks.forEach((s, i) => {
    if (i % every === 0)
      root.append(svg("line", { x1: x(s), x2: x(s), y1: onStrip ? stripY : top, y2: stripY + strip - 4,
        class: onStrip ? "sl-step-tick sl-on-strip" : "sl-step-tick" }));
  });
  if (zoomable) {
    stripRect.classList.add("sl-zoomable");
    stripRect.addEventListener("click", (e) => {
      const box = root.getBoundingClientRect();
      zoomAt(range.t0 + (((e as MouseEvent).clientX - box.left - left) / plotW) * span);
    });
  }
  root.append(svgText(left - 4, y(maxB) + 8, formatBytes(maxB), { class: "sl-tick", "text-anchor": "end" }));
  root.append(svgText(left - 4, y(0), "0", { class: "sl-tick", "text-anchor": "end" }));
  root.append(svgText(left, height - 4, ms(range.t0), { class: "sl-tick" }));
  root.append(svgText(left + plotW, height - 4, ms(range.t1), { class: "sl-tick", "text-anchor": "end" }));
  // The out-of-memory label's place, right-aligned at its marker (about 6 px a character).
  const oomShown = m.oom && m.oom.timeNs >= range.t0 - 1 && m.oom.timeNs <= range.t1 + 1;
  const oomAt = m.oom ? m.oom.line : -1;
  const oomText = m.oom ? `out of memory${oomAt >= 0 && data.lines[oomAt] ? ` at ${basename(data.lines[oomAt].path)}:${data.lines[oomAt].line}` : ""}: ` +
    `asked ${formatBytes(m.oom.requestedBytes)}, ${formatBytes(m.oom.freeBytes)} free` : "";
  const oomRight = m.oom ? Math.max(left + 4, Math.min(x(m.oom.timeNs) + 4, left + plotW + colW)) : 0;
  if (m.peakTimeNs >= range.t0 && m.peakTimeNs <= range.t1) {
    const px = x(m.peakTimeNs), py = y(m.peakAllocatedBytes);
    root.append(svg("circle", { cx: px, cy: py, r: 4, class: "sl-peak" }));
    const peakText = `peak ${formatBytes(m.peakAllocatedBytes)}`;
    const lx = Math.min(px + 6, left + plotW - 120);
    // Left out where the out-of-memory label would cover it (the header names the peak).
    if (!oomShown || lx + 6 * peakText.length < oomRight - 6 * oomText.length)
      root.append(svgText(lx, 12, peakText, { class: "sl-tick" }));
  }
  // The allocation that ran out of memory, marked where it happened, with what it asked.
  if (m.oom && oomShown) {
    const ox = x(m.oom.timeNs);
    const at = m.oom.line >= 0 ? data.lines[m.oom.line] : undefined;
    const mark = svg("line", { x1: ox, x2: ox, y1: top, y2: top + plotH, class: "sl-oom", id: "sl-oom",
      "data-requested": m.oom.requestedBytes, "data-free": m.oom.freeBytes, "data-line": m.oom.line });
    root.append(mark);
    root.append(svgText(oomRight, 12, oomText, { class: "sl-tick sl-oom-label", "text-anchor": "end" }));
    if (at) mark.addEventListener("click", () => host.openLine(at.path, at.line));
  }
  // The lines holding the peak, as bands of one column.
  const bx = left + plotW + 16;
  const peakMax = Math.max(1, m.peakReservedBytes, m.peakAllocatedBytes);
  let by = top + plotH;
  for (const band of m.top) {
    const l = data.lines[band.line];
    if (!l) continue;
    const h = (band.bytes / peakMax) * plotH;
    by -= h;
    const r = svg("rect", { x: bx, y: by, width: colW - 20, height: Math.max(1, h), fill: lineColour(band.line),
      class: "sl-band", "data-line": band.line, "data-bytes": band.bytes });
    r.addEventListener("mousemove", (e) => {
      const me = e as MouseEvent;
      tip.show([`${basename(l.path)}:${l.line}`, `${formatBytes(band.bytes)} alive at the peak`], me.clientX, me.clientY);
    });
    r.addEventListener("mouseleave", () => tip.hide());
    r.addEventListener("click", () => host.openLine(l.path, l.line));
    root.append(r);
    if (h >= 11) root.append(svgText(bx + colW - 16, by + h / 2 + 4, `:${l.line}`, { class: "sl-tick" }));
  }
  return root;
}
