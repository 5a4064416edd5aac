// The job of many ranks: a ranks × steps heat map (each step's wall against the job's median;
// the straggler's row and steps marked), a click picks that rank's timeline; and the lines whose
// time differs most across ranks. Drawn on a canvas: a thousand ranks stay one element.
import { Host, StepViewData } from "./data";
import { el, Tooltip } from "./dom";
import { basename, ms } from "./format";

// White at the median step or below, to red at twice it.
function colour(wall: number, median: number): string {
  if (wall < 0) return "rgba(127,127,127,.15)";
  const over = median > 0 ? Math.max(0, Math.min(1, wall / median - 1)) : 0;
  const g = Math.round(235 - 180 * over);
  return `rgb(245,${g},${g})`;
}

export function jobChart(data: StepViewData, host: Host, tip: Tooltip, width: number): HTMLElement | null {
  const job = data.job;
  if (!job || job.ranks.length < 2) return null;
  const section = el("section", { class: "sl-section", id: "sl-job" }, [el("h2", {}, ["Ranks × steps"])]);
  const columns = job.wallNs.reduce((a, r) => Math.max(a, r.length), 0);
  const label = 150;
  const rowH = Math.max(1, Math.min(14, Math.floor(480 / job.ranks.length)));
  const cellW = Math.max(2, Math.min(40, Math.floor((width - label) / Math.max(1, columns))));
  const canvas = el("canvas", {
    class: "sl-heat", role: "img", width: label + cellW * columns, height: rowH * job.ranks.length + 16,
    "aria-label": `Step time of ${job.ranks.length} ranks over ${columns} step columns` +
      (job.straggler >= 0 ? `; straggler ${job.ranks[job.straggler]}` : ""),
  }) as HTMLCanvasElement;
  const ctx = canvas.getContext("2d");
  const fg = getComputedStyle(document.body).color || "#1f2328";
  const stragglerSteps = new Set(job.stragglerSteps.map((s) => Math.floor(s / job.stepsPerColumn)));
  if (ctx) {
    ctx.font = "11px sans-serif";
    job.wallNs.forEach((row, r) => {
      row.forEach((wall, c) => {
        ctx.fillStyle = colour(wall, job.medianStepNs);
        ctx.fillRect(label + c * cellW, r * rowH, cellW - (cellW > 3 ? 1 : 0), rowH - (rowH > 3 ? 1 : 0));
      });
      if (rowH >= 10 || r === job.straggler) {
        ctx.fillStyle = r === job.straggler ? "#d1242f" : fg;
        ctx.fillText(job.ranks[r].slice(0, 24), 0, r * rowH + Math.min(rowH, 11));
      }
    });
    if (job.straggler >= 0) {
      ctx.strokeStyle = "#d1242f";
      ctx.lineWidth = 2;
      ctx.strokeRect(label, job.straggler * rowH, cellW * columns, Math.max(2, rowH));
      // Its steps' columns, where they are not all of them (then the row says it all).
      if (stragglerSteps.size < columns)
        for (const c of stragglerSteps) ctx.strokeRect(label + c * cellW, 0, cellW, rowH * job.ranks.length);
    }
    ctx.fillStyle = fg;
    // The caption within the labels' column (the columns' numbers start past it).
    const captions = job.stepsPerColumn > 1
      ? [`steps (${job.stepsPerColumn} per column, slowest shown)`, `steps (${job.stepsPerColumn} per column)`]
      : ["steps"];
    const caption = captions.find((t) => ctx.measureText(t).width <= label - 4) ?? captions[captions.length - 1];
    ctx.fillText(caption, 0, rowH * job.ranks.length + 13);
    // Step numbers under the columns: each where they fit, else the first and the last, which
    // ends at the canvas's edge rather than past it.
    const every = cellW >= 24 ? 1 : Math.max(1, columns - 1);
    for (let c = 0; c < columns; c += every) {
      const text = String(c * job.stepsPerColumn + 1);
      const x = Math.max(label + 2, Math.min(label + c * cellW + 2, canvas.width - ctx.measureText(text).width - 1));
      ctx.fillText(text, x, rowH * job.ranks.length + 13);
    }
  }
  const at = (ev: MouseEvent): [number, number] => {
    const box = canvas.getBoundingClientRect();
    return [Math.floor((ev.clientY - box.top) / rowH), Math.floor((ev.clientX - box.left - label) / cellW)];
  };
  canvas.addEventListener("mousemove", (ev) => {
    const [r, c] = at(ev);
    const wall = job.wallNs[r]?.[c];
    if (wall === undefined || c < 0) return tip.hide();
    const first = c * job.stepsPerColumn + 1; // numbered from 1, as the step bars are
    const steps = job.stepsPerColumn > 1 ? `steps ${first}–${first + job.stepsPerColumn - 1}` : `step ${first}`;
    tip.show([job.ranks[r], `${steps}: ${wall < 0 ? "none" : ms(wall)} (job median ${ms(job.medianStepNs)})`,
      r === job.straggler ? "the straggler: the others wait for it" : ""].filter((l) => l), ev.clientX, ev.clientY);
  });
  canvas.addEventListener("mouseleave", () => tip.hide());
  // A click picks the rank's timeline where the page has one.
  canvas.addEventListener("click", (ev) => {
    const [r] = at(ev);
    const select = document.querySelector<HTMLSelectElement>("#sl-timeline select");
    const name = job.ranks[r];
    if (!select || name === undefined) return;
    for (const option of Array.from(select.options))
      if (option.text === name || option.text.startsWith(`${name} (`)) {
        select.value = option.value;
        select.dispatchEvent(new Event("change"));
      }
  });
  section.append(canvas);
  section.append(el("p", { class: "sl-note" }, [
    `Each cell is a rank's step: white at or under the job's median step (${ms(job.medianStepNs)}), ` +
      "deepening to red at twice it or more; grey: no such step. Click a row for its timeline where the page has one."]));
  if (job.straggler >= 0)
    section.append(el("p", { class: "sl-note", id: "sl-job-straggler" }, [
      `Straggler: ${job.ranks[job.straggler]}` +
        (job.stragglerSteps.length ? ` (steps ${job.stragglerSteps.slice(0, 12).map((s) => s + 1).join(", ")}` +
          `${job.stragglerSteps.length > 12 ? ", …" : ""})` : ""),
    ]));
  if (job.lines.length > 0) {
    const table = el("table", { class: "sl-story sl-job-lines", id: "sl-job-lines" }, [
      el("tr", {}, ["line", "median", "p95", "max", "on"].map((h) => el("th", {}, [h]))),
    ]);
    for (const l of job.lines) {
      const link = el("a", { href: "#" }, [`${basename(l.path)}:${l.line}`]);
      link.addEventListener("click", (ev) => {
        ev.preventDefault();
        host.openLine(l.path, l.line);
      });
      table.append(el("tr", {}, [el("td", {}, [link]), el("td", {}, [ms(l.medianNs)]), el("td", {}, [ms(l.p95Ns)]),
        el("td", {}, [ms(l.maxNs)]), el("td", {}, [job.ranks[l.maxRank] ?? ""])]));
    }
    section.append(el("h2", {}, ["Lines across ranks (ms per step)"]), table);
  }
  return section;
}
