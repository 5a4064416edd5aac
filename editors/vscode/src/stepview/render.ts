// The step view's one renderer, for the VS Code webview and `sightline report --format html`
// alike (bundled by esbuild into one script, embedded in the binary at build time). It reads
// the server's data (data.ts) and draws the four pictures; every mark opens its line through
// the host. Nothing is fetched: the page is whole without a network.
import { Host, StepViewData, StoryPart, StoryRow } from "./data";
import { el, Tooltip } from "./dom";
import { basename, formatBytes, kindsText, ms, formatShare } from "./format";
import { jobChart } from "./job";
import { linesChart } from "./lines_chart";
import { memoryChart } from "./memory";
import { stepsChart } from "./steps_chart";
import { timelineChart } from "./timeline";

const STYLE = `
:root { --sl-fg: var(--vscode-editor-foreground, #1f2328); --sl-bg: var(--vscode-editor-background, #ffffff);
  --sl-muted: var(--vscode-descriptionForeground, #656d76); --sl-border: var(--vscode-panel-border, #d0d7de);
  --sl-focus: var(--vscode-focusBorder, #0969da); }
@media (prefers-color-scheme: dark) { body:not(.vscode-light):not(.vscode-high-contrast-light) {
  --sl-fg: var(--vscode-editor-foreground, #e6edf3); --sl-bg: var(--vscode-editor-background, #0d1117);
  --sl-muted: var(--vscode-descriptionForeground, #9198a1); --sl-border: var(--vscode-panel-border, #30363d); } }
body { color: var(--sl-fg); background: var(--sl-bg); font: 13px/1.45 var(--vscode-font-family, system-ui, sans-serif); margin: 0; }
.sl-root { padding: 12px 16px; max-width: 1400px; }
.sl-root h1 { font-size: 17px; margin: 0 0 4px; } .sl-root h2 { font-size: 14px; margin: 18px 0 6px; }
.sl-summary { color: var(--sl-muted); margin: 0 0 6px; }
.sl-note { color: var(--sl-muted); margin: 4px 0; }
.sl-chart text { fill: var(--sl-fg); font-size: 11px; } .sl-chart .sl-tick { fill: var(--sl-muted); }
.sl-chart .sl-rank { font-weight: 600; } .sl-chart .sl-straggler { fill: #d1242f; }
.sl-axis { stroke: var(--sl-border); } .sl-unprofiled { stroke: var(--sl-fg); stroke-dasharray: 4 3; opacity: .6; }
.sl-bar:focus, .sl-line-bar:focus, .sl-timeline:focus, button:focus { outline: 2px solid var(--sl-focus); outline-offset: 1px; }
.sl-bar.sl-warm-up, .sl-bar.sl-outlier, .sl-bar.sl-lost { opacity: .55; }
.sl-seg, .sl-line-bar, .sl-band { cursor: pointer; } .sl-seg:hover { stroke: var(--sl-fg); stroke-width: 1; }
.sl-legend { display: flex; flex-wrap: wrap; gap: 4px 14px; color: var(--sl-muted); font-size: 12px; }
.sl-legend-item { display: inline-flex; align-items: center; gap: 5px; }
.sl-swatch { width: 11px; height: 11px; display: inline-block; border-radius: 2px; }
.sl-fwd { fill: #4e79a7; background: #4e79a7; } .sl-bwd { fill: #f28e2b; background: #f28e2b; }
.sl-self { fill: #76b7b2; background: #76b7b2; } .sl-inclusive { fill: var(--sl-border); background: var(--sl-border); }
.sl-allocated { fill: none; stroke: #4e79a7; stroke-width: 1.5; } .sl-reserved { fill: none; stroke: #e15759; stroke-dasharray: 4 3; }
.sl-step-tick { stroke: var(--sl-border); pointer-events: none; } .sl-step-tick.sl-on-strip { stroke: var(--sl-muted); } .sl-peak { fill: #e15759; }
.sl-mem-band { cursor: pointer; opacity: .85; } .sl-mem-band:hover { opacity: 1; stroke: var(--sl-fg); stroke-width: 1; }
.sl-mem-other { fill: #bdbdbd; opacity: .55; } .sl-step-strip { fill: var(--sl-border); opacity: .6; } .sl-step-strip.sl-zoomable { cursor: zoom-in; }
.sl-oom { stroke: #e15759; stroke-width: 2; stroke-dasharray: 5 3; cursor: pointer; } .sl-oom-label { fill: #e15759; }
.sl-story { border-collapse: collapse; font-size: 12px; } .sl-story th { text-align: left; vertical-align: top; padding: 1px 10px 1px 0; color: var(--sl-muted); font-weight: normal; white-space: nowrap; }
.sl-story td { padding: 1px 0; white-space: pre-wrap; } .sl-story-grid { border-collapse: collapse; margin: 2px 0; } .sl-story-grid th, .sl-story-grid td { padding: 0 10px 0 0; white-space: nowrap; } .sl-story-grid .sl-num { text-align: right; } .sl-story tr.sl-warning td, .sl-story tr.sl-warning th { color: #b8860b; }
.sl-job-lines td, .sl-job-lines th { padding-right: 14px; } .sl-heat { display: block; }
.sl-oom-chain { color: #e15759; } .sl-oneoff { color: var(--sl-muted); } .sl-headline { font-size: 14px; } .sl-warning { color: #b8860b; }
.sl-timeline { display: block; border: 1px solid var(--sl-border); cursor: grab; }
.sl-root select { color: var(--sl-fg); background: var(--sl-bg); border: 1px solid var(--sl-border); }
.sl-controls button { margin: 0 4px 4px 0; color: var(--sl-fg); background: transparent; border: 1px solid var(--sl-border); border-radius: 3px; padding: 1px 8px; cursor: pointer; }
.sl-tooltip { position: absolute; z-index: 10; pointer-events: none; max-width: 520px; background: var(--vscode-editorHoverWidget-background, #fff8c5);
  color: var(--vscode-editorHoverWidget-foreground, #1f2328); border: 1px solid var(--sl-border); padding: 4px 8px; border-radius: 4px; font-size: 12px; }
body.vscode-high-contrast .sl-seg, body.vscode-high-contrast .sl-band { stroke: var(--sl-fg); stroke-width: 1; }
.sl-source { font: 12px/1.5 var(--vscode-editor-font-family, ui-monospace, monospace); border-collapse: collapse; }
.sl-source td { padding: 0 8px; white-space: pre; vertical-align: top; } .sl-source td.sl-num { text-align: right; color: var(--sl-muted); }
.sl-source tr.sl-hot td { background: rgba(242, 142, 43, .18); } .sl-source tr:target td, .sl-source tr.sl-target td { outline: 2px solid var(--sl-focus); }
`;

function header(data: StepViewData): HTMLElement {
  const h = el("header", {}, [el("h1", {}, [`Sightline · ${data.profile.file}`])]);
  const parts: string[] = [];
  if (data.profile.gpus.length > 0) parts.push(data.profile.gpus.join(", "));
  if (data.hasSteps) {
    parts.push(`${data.steadySteps} steady steps (${data.stepsSource})`);
    // The step itself is the headline's (the report's figure), not one rank's median.
    const walls = data.ranks.map((r) => r.medianWallNs).filter((w) => w > 0);
    if (walls.length && !data.headline) parts.push(`median step ${ms(walls[0])}`);
  } else if (data.job && data.job.ranks.length > 0) {
    parts.push(`${data.job.ranks.length} ranks, median step ${ms(data.job.medianStepNs)}`);
  } else if (data.ranks.length > 0 || data.topLines.length > 0) {
    parts.push("no steps found: figures are totals");
  }
  if (data.memory) parts.push(`GPU memory peak ${formatBytes(data.memory.peakAllocatedBytes)} allocated`);
  if (data.ranks.length > 1) parts.push(`${data.ranks.length} ranks`);
  h.append(el("p", { class: "sl-summary" }, [parts.join(" · ")]));
  // The headline, as the report and the editor say it: the step as captured, then without the
  // profiler (measured, logged, or the range that surely holds it) and the bound where it holds.
  const head = data.headline;
  if (head) {
    h.append(
      el("p", { class: "sl-headline", id: "sl-headline" }, [
        el("strong", {}, [`${head.captured} · ${head.summary}`]),
      ]),
    );
    h.append(el("p", { class: "sl-unprofiled-text" }, [`Without the profiler: ${head.text}`]));
    if (head.measure) h.append(el("p", { class: "sl-measure" }, ["Measure: ", ...withCode(head.measure)]));
  }
  return h;
}

// Text whose `backticked` spans are code (the advice's commands): code elements, never literal
// backticks on the page.
function withCode(text: string): (Node | string)[] {
  return text.split("`").map((part, i) => (i % 2 === 1 ? el("code", {}, [part]) : part));
}

// A story row's parts: places link to their lines, code as code, the rest as text.
function storyParts(parts: StoryPart[], host: Host): (Node | string)[] {
  return parts.map((p) => {
    if (p.kind === "place" && p.path && p.line) {
      const link = el("a", { href: "#", class: "sl-place" }, [p.text]);
      link.addEventListener("click", (ev) => {
        ev.preventDefault();
        host.openLine(p.path ?? "", p.line ?? 0);
      });
      return link;
    }
    return p.kind === "code" ? el("code", {}, [p.text]) : p.text;
  });
}

function storyTable(t: NonNullable<StoryRow["table"]>): HTMLElement {
  const table = el("table", { class: "sl-story-grid" }, [
    el("tr", {}, t.columns.map((c) => el("th", { class: c.left ? "" : "sl-num" }, [c.name]))),
  ]);
  for (const r of t.rows)
    table.append(el("tr", {}, r.map((cell, i) => el("td", { class: t.columns[i]?.left ? "" : "sl-num" }, [cell]))));
  return table;
}

// The report's header as the server tells it (its story rows): warnings in colour, tables as
// tables, places as links. Rows the headline above already gives are left out.
function story(data: StepViewData, host: Host): HTMLElement | null {
  const entries = (data.story ?? []).filter((e) => !["Profile", "GPUs", "Unprofiled", "Measure"].includes(e.label));
  if (entries.length === 0) return null;
  const section = el("section", { class: "sl-section", id: "sl-story" }, [el("h2", {}, ["The step's story"])]);
  const table = el("table", { class: "sl-story" });
  for (const e of entries) {
    const label = e.label && e.qualifier ? `${e.label} (${e.qualifier})` : e.label;
    const cell = el("td", { "data-line": e.lines[0] ?? "" }, storyParts(e.parts?.[0] ?? [{ kind: "text", text: e.lines[0] ?? "" }], host));
    if (e.table) {
      cell.append(storyTable(e.table));
      if (e.table.note) cell.append(el("div", { class: "sl-note" }, [e.table.note]));
    }
    table.append(el("tr", { class: e.role === "warning" ? "sl-warning" : "", "data-label": e.label, "data-role": e.role,
      "data-qualifier": e.qualifier ?? "" }, [
      el("th", {}, [label]),
      cell,
    ]));
  }
  section.append(table);
  return section;
}

// The HTML report's annotated hot lines; a mark's click lands here.
function sources(data: StepViewData): HTMLElement | null {
  if (!data.sources || data.sources.length === 0) return null;
  const section = el("section", { class: "sl-section", id: "sl-sources" }, [el("h2", {}, ["Annotated hot lines"])]);
  // Each line's share and one-off mark are the server's (the report's margin shows the same).
  for (const file of data.sources) {
    section.append(el("h3", {}, [file.path]));
    const table = el("table", { class: "sl-source" });
    let last = 0;
    for (const row of file.lines) {
      if (last > 0 && row.line > last + 1) table.append(el("tr", {}, [el("td", { class: "sl-num" }, ["⋮"])]));
      last = row.line;
      const l = row.line_index >= 0 ? data.lines[row.line_index] : undefined;
      // The line's own time, or what runs beneath it where the server tells that (as the margin does).
      const incl = !!l?.inclusiveShown;
      const time = l && (l.selfNs > 0 || incl);
      const held = l && l.memoryPeakBytes > 0;
      const tr = el("tr", { id: anchorOf(file.path, row.line), class: time || held ? "sl-hot" : "" }, [
        el("td", { class: "sl-num", title: incl ? `itself ${ms(l.selfNs)}` : "" },
          [time ? `${ms(incl ? l.inclusiveNs : l.selfNs)}${incl ? " incl" : ""}` : ""]),
        el("td", { class: "sl-num" }, [time ? formatShare(incl ? l.inclusiveShare : l.share) : ""]),
        el("td", { class: "sl-num" }, [held ? formatBytes(l.memoryPeakBytes) : ""]),
        el("td", { class: "sl-num" }, [String(row.line)]),
        el("td", {}, [row.text]),
        el("td", { class: "sl-oneoff" }, [l && l.oneoffMarked ? `◂ one-off ${ms(l.oneoffNs ?? 0)}` : ""]),
      ]);
      table.append(tr);
      // A line of three kinds of work or more and a tenth of the time: what it runs.
      if (l && l.kinds && l.kinds.length >= 3 && l.share >= 0.1)
        table.append(el("tr", { class: "sl-kinds" }, [el("td", { class: "sl-num" }), el("td", { class: "sl-num" }),
          el("td", { class: "sl-num" }), el("td", { class: "sl-num" }), el("td", {}, [`↳ by kind: ${kindsText(l.kinds)}`]),
          el("td")]));
    }
    section.append(table);
  }
  return section;
}

export function anchorOf(path: string, line: number): string {
  return `L-${basename(path).replace(/[^A-Za-z0-9_.-]/g, "_")}-${line}`;
}

export function render(root: HTMLElement, data: StepViewData, host: Host): void {
  if (!document.getElementById("sl-style")) {
    const style = el("style", { id: "sl-style" });
    style.textContent = STYLE;
    document.head.append(style);
  }
  root.replaceChildren();
  const page = el("div", { class: "sl-root" });
  root.append(page);
  const tip = new Tooltip(document.body);
  const width = Math.max(480, Math.min(1360, (root.clientWidth || window.innerWidth) - 40));
  page.append(header(data));
  const told = story(data, host);
  if (told) page.append(told);
  const memory = memoryChart(data, host, tip, width);
  // A memory snapshot has no steps and no time: its memory alone.
  const timed = data.ranks.length > 0 || data.topLines.length > 0;
  if (memory && !timed) page.append(memory);
  const job = jobChart(data, host, tip, width);
  if (job) page.append(job);
  if (timed) {
    page.append(stepsChart(data, host, tip, width));
    page.append(timelineChart(data, host, tip, width));
    if (memory) page.append(memory);
    page.append(linesChart(data, host, tip, width));
  }
  const listing = sources(data);
  if (listing) page.append(listing);
}

// The HTML report's host: a click scrolls to the line's annotated listing when it has one.
export function reportHost(): Host {
  return {
    openLine(path: string, line: number) {
      const row = document.getElementById(anchorOf(path, line));
      if (!row) return;
      document.querySelectorAll(".sl-target").forEach((e) => e.classList.remove("sl-target"));
      row.classList.add("sl-target");
      row.scrollIntoView({ block: "center" });
    },
  };
}
