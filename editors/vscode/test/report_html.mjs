// `sightline report --format html` drawn in a real browser (Debian's headless Chromium through
// Playwright): for bundled captures of one GPU, of two ranks, of torch.compile and of a memory
// snapshot, the bars the page drew are checked against `report --format json`'s figures (the
// same steps, the same ns on every segment, heights in proportion, the same lines), a click on
// the tallest segment lands on its line's annotated listing, and the page of the largest
// bundled capture opens in under 1 s and weighs under 2 MB. Saves a screenshot of each picture.
// Also `sightline diff --format html`: the runs' step bars side by side (checkDiffPage).
//
// usage: node report_html.mjs --server build/server/sightline --root REPO --out DIR [--images DIR]
//   --images: also write the README's pictures (docs/images/step-view-*.png) there
import { execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, statSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
for (const required of ["server", "root", "out"]) if (!args[required]) throw new Error(`missing --${required}`);
const root = resolve(args.root);
const server = resolve(args.server);
const out = resolve(args.out);
mkdirSync(out, { recursive: true });
const tmp = mkdtempSync(join(tmpdir(), "sightline-html-"));

let failures = 0;
function check(ok, what, detail = "") {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}${!ok && detail ? `: ${detail}` : ""}`);
  if (!ok) failures++;
  return ok;
}

function unxz(relative) {
  const dest = join(tmp, relative.replace(/[/]/g, "_").replace(/\.xz$/, ""));
  writeFileSync(dest, execFileSync("xz", ["-dc", join(root, relative)], { maxBuffer: 1 << 30 }));
  return dest;
}

// The captures: [name, profile, script, extra arguments].
const cache = join(tmp, "cache");
mkdirSync(cache);
execFileSync("tar", ["-xJf", join(root, "tests/data/compile/inductor_cache.tar.xz"), "-C", cache]);
const cases = [
  ["example", unxz("examples/train_small_naive.sqlite.xz"), "examples/train_small.py", []],
  ["ranks", unxz("tests/data/multi/ddp/ddp_one.sqlite.xz"), "tests/data/multi/ddp/train_ddp.py", []],
  ["compiled", unxz("tests/data/compile/compiled_run.sqlite.xz"), "tests/data/compile/train_gpt.py",
    ["--compiled-code", join(cache, "inductor_cache")]],
  ["memory", unxz("tests/data/memory/gpt_oom_eval.pickle.xz"), "tests/data/memory/gpt_mem.py", []],
  // Twelve iterations recorded from the start: the stacked chart's peak step, zoomed.
  ["memory-steps", unxz("tests/data/memory/gpt_start.pickle.xz"), "tests/data/memory/gpt_mem.py", []],
  // A capture that ended before its GPU records arrived: the page warns as the report does.
  ["killed", unxz("tests/data/multi/killed/killed.sqlite.xz"), "tests/data/multi/killed/train_resnet.py", []],
];
const largest = "ranks"; // ddp_one.sqlite: the largest capture bundled (27 MB, two ranks)

// What a segment stands for in the JSON: its ns and its line (as steps_chart.ts reads them).
const CAUSES = ["launch", "sync", "input", "host", "compile"];
function partValue(step, part) {
  if (part === "compute") return step.computeNs;
  if (part === "comm") return step.commNs - step.commWaitNs;
  if (part === "commWait") return step.commWaitNs;
  if (part === "copy") return step.copyNs;
  return step.idleNs[part];
}
function partLine(view, step, part) {
  if (CAUSES.includes(part) && (view.causeLines?.[part] ?? []).length > 0) return view.causeLines[part][0];
  return step.topLine;
}

// The stacked memory chart against `report --format json`: each band's bytes at the peak are
// its line's memory_at_peak_bytes, drawn that thick at the peak's x, most first from the
// bottom; the peak's step zooms in and keeps the bands; the out-of-memory marker stays marked.
async function checkStackedMemory(page, name, json, view) {
  const atPeak = new Map();
  for (const f of json.files)
    for (const l of f.lines) if (l.memory_at_peak_bytes > 0) atPeak.set(`${basename(f.local_path ?? f.path)}:${l.line}`, l.memory_at_peak_bytes);
  const read = () => page.$eval(".sl-memory", (chart) => ({
    maxBytes: Number(chart.getAttribute("data-max-bytes")), plotHeight: Number(chart.getAttribute("data-plot-height")),
    peakX: chart.getAttribute("data-peak-x"),
    bands: [...chart.querySelectorAll(".sl-mem-band")].map((b) => ({ path: b.getAttribute("data-path"),
      line: Number(b.getAttribute("data-line-no")), peak: Number(b.getAttribute("data-peak-bytes")), d: b.getAttribute("d") })),
    oom: chart.querySelector("#sl-oom") !== null,
  }));
  const thicknessAt = (d, x) => {  // the band's top and bottom y where its outline passes x
    const ys = [...d.matchAll(/[ML]([\d.]+),([\d.]+)/g)].filter((m) => Math.abs(Number(m[1]) - x) < 0.05).map((m) => Number(m[2]));
    return ys.length >= 2 ? Math.max(...ys) - Math.min(...ys) : -1;
  };
  const whole = await read();
  const expected = view.memory.bands.length;
  check(whole.bands.length === expected && expected > 0, `${name}: the stacked chart draws a band for each of the ${expected} top lines`,
    `${whole.bands.length} drawn`);
  let same = true, thick = true, order = true, detail = "";
  whole.bands.forEach((b, i) => {
    const want = atPeak.get(`${basename(b.path)}:${b.line}`);
    if (b.peak !== want) same = false, detail += ` ${basename(b.path)}:${b.line} ${b.peak} vs ${want};`;
    const px = thicknessAt(b.d, Number(whole.peakX));
    if (Math.abs(px - (b.peak / whole.maxBytes) * whole.plotHeight) > 0.25) thick = false, detail += ` ${b.line}: ${px} px;`;
    if (i > 0 && b.peak > whole.bands[i - 1].peak) order = false;
  });
  check(same, `${name}: each band's bytes at the peak are the JSON's memory_at_peak_bytes`, detail);
  check(thick && whole.peakX !== "", `${name}: each band is drawn as thick as its bytes at the peak`, detail);
  check(order, `${name}: the bands are stacked most first from the bottom`);
  if (view.memory.oom) check(whole.oom, `${name}: the out-of-memory marker on the stacked chart`);
  await page.click("#sl-memory-peak-step");
  const step = await read();
  const label = await page.$eval("#sl-memory-note", (e) => e.textContent);
  check(step.bands.length === expected && /Zoomed into the peak's step/.test(label) && step.peakX !== "",
    `${name}: the peak's step zooms in with its bands and the peak`, label);
  await page.click("#sl-memory-whole");
}

// The terminal's label column for a story row (server/render/story_render.cpp): a label in ten
// columns, a longer one and a space (two after a label of several words), "(qualifier) ".
function labelColumn(label, qualifier) {
  if (!label) return " ".repeat(10);
  const column = label.length < 10 ? label.padEnd(10) : label + (label.includes(" ") ? "  " : " ");
  return qualifier ? `${column}(${qualifier}) ` : column;
}

// Every bundled capture (tests/data/captures.json) as a page: it renders without errors, its story
// rows are the text report's header lines, in order, and each line of the annotated listing shows
// the margin's time, share and one-off mark for that line.
// A job of many steps (the template's run 40 times over, more columns than numbers fit under):
// every text of the heat map lies inside its canvas, and the texts under it do not overlap.
async function checkLongJob(browser, summary) {
  const jobDir = join(tmp, "job_long");
  execFileSync("python3", [join(root, "bench/make_job.py"), "--ranks", "4", "--out", jobDir, "--repeat-steps", "40",
    summary]);
  const html = join(out, "report-job-long.html");
  execFileSync(server, ["report", "--format", "html", "--merge", jobDir, "-o", html]);
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  // Each text drawn on a canvas, with its box as the canvas measured it.
  await page.addInitScript(() => {
    const fill = CanvasRenderingContext2D.prototype.fillText;
    window.slTexts = [];
    CanvasRenderingContext2D.prototype.fillText = function (text, x, y) {
      window.slTexts.push({ text, x, y, width: this.measureText(text).width, canvas: this.canvas.width });
      return fill.apply(this, arguments);
    };
  });
  await page.goto(pathToFileURL(html).href);
  await page.waitForSelector("body[data-rendered=true]", { timeout: 10000 });
  const texts = await page.evaluate(() => window.slTexts);
  const columns = await page.$eval("#sl-job canvas", (c) => c.getAttribute("aria-label")).catch(() => "");
  check(/over (\d+) step columns/.test(columns) && Number(columns.match(/over (\d+) step columns/)[1]) > 60,
    "long job: the heat map has more columns than step numbers fit under", columns);
  const outside = texts.filter((t) => t.x < 0 || t.x + t.width > t.canvas);
  check(texts.length > 0 && outside.length === 0, "long job: every text of the heat map lies inside its canvas",
    outside.map((t) => `"${t.text}" at ${t.x.toFixed(0)}-${(t.x + t.width).toFixed(0)} of ${t.canvas}`).join("; "));
  const bottom = Math.max(...texts.map((t) => t.y));
  const under = texts.filter((t) => t.y === bottom).sort((a, b) => a.x - b.x);
  const overlapping = under.filter((t, i) => i > 0 && under[i - 1].x + under[i - 1].width > t.x);
  check(under.length >= 3 && overlapping.length === 0, "long job: the caption and step numbers under it do not overlap",
    under.map((t) => `"${t.text}" ${t.x.toFixed(0)}-${(t.x + t.width).toFixed(0)}`).join(", "));
  await page.screenshot({ path: join(out, "report-job-long.png"), fullPage: true });
  await page.close();
}

async function everyCapture(browser) {
  const { captures } = JSON.parse(readFileSync(join(root, "tests/data/captures.json"), "utf8"));
  for (const c of captures) {
    const profile = c.profile.endsWith(".xz") ? unxz(c.profile) : join(root, c.profile);
    const html = join(tmp, `every-${c.name}.html`);
    const common = ["--profile", profile, join(root, c.script)];
    const text = execFileSync(server, ["report", ...common], { maxBuffer: 1 << 28, encoding: "utf8" });
    execFileSync(server, ["report", "--format", "html", "-o", html, ...common]);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(pathToFileURL(html).href);
    await page.waitForSelector("body[data-rendered=true]", { timeout: 10000 });
    const rows = await page.$$eval("#sl-story > table > tr", (trs) => trs.map((t) => ({
      label: t.getAttribute("data-label"), qualifier: t.getAttribute("data-qualifier") ?? "",
      line: t.querySelector("td").getAttribute("data-line") ?? "" })));
    const header = text.slice(0, text.indexOf("\n\n")).split("\n");
    const missing = rows.map((r) => labelColumn(r.label, r.qualifier) + r.line).filter((l) => !header.includes(l));
    // And each labelled header line is a row (but those the headline above the story gives).
    const told = new Set(rows.map((r) => labelColumn(r.label, r.qualifier) + r.line));
    const untold = header.filter((l) => /^[A-Z]/.test(l) && !/^(Profile|GPUs|Unprofiled|Measure)\b/.test(l) && !told.has(l));
    check(errors.length === 0 && missing.length === 0 && untold.length === 0 && rows.length > 0,
      `${c.name}: the page renders, its ${rows.length} story rows the report's header lines`,
      `${errors.join("; ")} ${missing.slice(0, 3).join(" | ")} ${untold.slice(0, 3).join(" | ")}`);
    // Code is set as code: no literal backtick in the headline or the story ("Measure: `sightline ...`").
    const ticks = await page.$$eval("#sl-headline ~ p, #sl-story", (els) =>
      els.map((e) => e.textContent).filter((t) => t.includes("`")));
    check(ticks.length === 0, `${c.name}: no literal backticks in the headline or the story`, ticks.join(" | ").slice(0, 300));
    // The listing against the margin: "   4.01     81%  1.29 + 2.73  ████ │   33  code".
    const margins = new Map();
    for (const l of text.slice(text.indexOf("\n\n")).split("\n")) {
      const m = l.match(/^ *(Σ )?([0-9.]+) +([0-9.]+%)  (incl, self [0-9.]+)?.*│ +([0-9]+)  /);
      if (m && !m[1]) margins.set(Number(m[5]), { ms: m[2], share: m[3], incl: !!m[4], oneoff: l.includes("◂ one-off ") });
    }
    const listed = await page.$$eval("#sl-sources tr.sl-hot", (trs) => trs.map((t) => {
      const td = t.querySelectorAll("td");
      return { ms: td[0].textContent.replace(" ms", ""), share: td[1].textContent, line: Number(td[3].textContent),
        oneoff: td[5].textContent !== "" };
    }));
    let agree = true, detail = "", compared = 0;
    for (const l of listed) {
      const m = margins.get(l.line);
      if (!m || l.ms === "") continue;
      ++compared;
      const want = `${m.ms}${m.incl ? " incl" : ""}`;
      if (l.ms !== want || l.share !== m.share || l.oneoff !== m.oneoff) {
        agree = false;
        detail += ` line ${l.line}: page ${l.ms} ${l.share}${l.oneoff ? " one-off" : ""}, text ${want} ${m.share}${m.oneoff ? " one-off" : ""};`;
      }
    }
    check(agree, `${c.name}: the listing's ${compared} lines show the margin's time, share and one-off mark`, detail);
    await page.close();
  }
}

function basename(path) {
  return path.split(/[\\/]/).pop();
}

// `sightline diff --format html` of the two-rank DDP job and the same job with one rank starved
// of data (tests/data/regress/ddp): one bar per step sample of each run, as many as the JSON
// counts, the new run's red (the step grew past the spread), its median drawn, the verdict and
// the slowed rank's wait first among the parts.
async function checkDiffPage(browser) {
  const summaries = {};
  for (const run of ["base", "slow"]) {
    const dir = join(tmp, `diff-${run}`);
    mkdirSync(dir);
    const profile = join(dir, `${run}.sqlite`);
    writeFileSync(profile, execFileSync("xz", ["-dc", join(root, `tests/data/regress/ddp/${run}.sqlite.xz`)], { maxBuffer: 1 << 30 }));
    writeFileSync(join(dir, `${run}.steps.json`), readFileSync(join(root, `tests/data/regress/ddp/${run}.steps.json`)));
    writeFileSync(join(dir, "train.py"), readFileSync(join(root, "tests/data/regress/ddp/train.py")));
    summaries[run] = join(dir, "summary.json");
    execFileSync(server, ["report", "--format", "summary", "--profile", profile, "-o", summaries[run], "train.py"], { cwd: dir });
  }
  const html = join(out, "diff.html");
  const gate = ["--fail-on", "step:+5%"];
  const run = (format) => {
    try {
      return execFileSync(server, ["diff", ...gate, "--format", format, summaries.base, summaries.slow], { encoding: "utf8", maxBuffer: 1 << 26 });
    } catch (e) {
      return e.status === 1 ? e.stdout : "";
    }
  };
  const json = JSON.parse(run("json"));
  writeFileSync(html, run("html"));
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  await page.goto(pathToFileURL(html).href);
  check(errors.length === 0, "diff page: renders without errors", errors.join("; "));
  const bars = await page.$$eval("svg.steps rect", (rs) => rs.map((r) => r.getAttribute("class")));
  const base = bars.filter((c) => c === "base").length, fresh = bars.filter((c) => c.startsWith("new")).length;
  check(base === json.step.base_samples && fresh === json.step.new_samples,
    "diff page: a bar per step sample of each run, as the JSON counts", `${base}/${json.step.base_samples} ${fresh}/${json.step.new_samples}`);
  check(json.step.certain && bars.filter((c) => c === "new grew").length === fresh, "diff page: the new run's bars marked as grown");
  check((await page.$$("svg.steps line.median")).length === 2, "diff page: each run's median drawn");
  const h1 = await page.$eval("h1", (e) => e.textContent);
  check(h1.startsWith("Sightline: FAIL"), "diff page: the verdict heads the page", h1);
  const firstPart = await page.$eval("table.parts tr:nth-child(2) td", (e) => e.textContent).catch(() => "");
  check(firstPart.startsWith("rank 1: the loop waiting for its next batch"), "diff page: the slowed rank's wait first", firstPart);
  await page.screenshot({ path: join(out, "diff.png"), fullPage: true });
  await page.close();
}

async function main() {
  const browser = await chromium.launch({ executablePath: args.chromium ?? "/usr/bin/chromium", args: ["--no-sandbox"] });
  try {
    for (const [name, profile, script, extra] of cases) {
      const html = join(out, `report-${name}.html`);
      const common = ["--profile", profile, ...extra, join(root, script)];
      const json = JSON.parse(execFileSync(server, ["report", "--format", "json", ...common], { maxBuffer: 1 << 28, encoding: "utf8" }));
      execFileSync(server, ["report", "--format", "html", "-o", html, ...common]);
      const view = json.step_view;
      const bytes = statSync(html).size;
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const errors = [];
      page.on("pageerror", (e) => errors.push(String(e)));
      page.on("request", (r) => { if (!r.url().startsWith("file:")) errors.push(`fetched ${r.url()}`); });
      const t0 = Date.now();
      await page.goto(pathToFileURL(html).href);
      await page.waitForSelector("body[data-rendered=true]", { timeout: 10000 });
      const openMs = Date.now() - t0;
      check(errors.length === 0, `${name}: the page renders without errors or fetches`, errors.join("; "));
      // The report's story on the page, in its words: every line of the text header's verdict
      // and warnings, the warnings marked as such.
      const text = execFileSync(server, ["report", ...common], { maxBuffer: 1 << 28, encoding: "utf8" });
      const rows = await page.$$eval("#sl-story > table > tr", (trs) => trs.map((t) => ({
        label: t.getAttribute("data-label"), text: t.querySelector("td").textContent, warning: t.classList.contains("sl-warning") })));
      const header = text.slice(0, text.indexOf("\n\n"));
      const wanted = header.split("\n").filter((l) => /^(Step|Try|Warning|Profiler|Out of memory|Compile|One-off)\b/.test(l));
      const missing = wanted.filter((l) => !rows.some((r) => l.endsWith(r.text.trim()) && r.text.trim().length > 0));
      // (A snapshot without an error or warning tells nothing there: memory-steps.)
      check((wanted.length > 0 || name === "memory-steps") && missing.length === 0, `${name}: the page tells the report's story (${wanted.length} lines)`,
        missing.join(" | "));
      // Each cause of the verdict with its figures, as the text tells it (and as the JSON holds it).
      const causeLines = header.split("\n").filter((l) =>
        /^(Waits {5}| {10})(as captured: )?(host launch overhead|host-device syncs|input pipeline|other host work|exposed communication|ranks waiting for each other|torch\.compile compiling) /.test(l));
      const causesMissing = causeLines.filter((l) => !rows.some((r) => r.text.includes(l.replace(/^Waits/, "").trim())));
      check(causeLines.length === (json.verdict?.causes?.length ?? 0) && causesMissing.length === 0,
        `${name}: each of the verdict's ${causeLines.length} causes on the page, with the text's figures`, causesMissing.join(" | "));
      // A line's work by kind (an installed model called on one line): the text's words on the page.
      const kindLines = text.split("\n").filter((l) => l.includes("↳ by kind: ")).map((l) => l.slice(l.indexOf("↳ by kind: ")));
      const kindRows = await page.$$eval("#sl-sources tr.sl-kinds", (trs) => trs.map((t) => t.textContent.trim()));
      check(kindLines.every((l) => kindRows.includes(l.trim())),
        `${name}: each line's work by kind as the text says it (${kindLines.length})`, `${kindLines.join(" | ")} vs ${kindRows.join(" | ")}`);
      const warnings = header.split("\n").filter((l) => l.startsWith("Warning"));
      check(rows.filter((r) => r.label === "Warning" && r.warning).length === warnings.length,
        `${name}: its ${warnings.length} warning(s) shown as warnings`);
      if (view.memory && view.memory.oom) {
        const oom = await page.$eval("#sl-oom", (e) => ({ requested: Number(e.getAttribute("data-requested")),
          free: Number(e.getAttribute("data-free")) })).catch(() => null);
        const chain = await page.$eval("#sl-oom-chain", (e) => e.textContent).catch(() => "");
        check(oom && oom.requested === view.memory.oom.requestedBytes && oom.free === view.memory.oom.freeBytes &&
              /called from .*\.py:\d+/.test(chain),
              `${name}: the out-of-memory event marked on the chart, its chain with file:line`, `${JSON.stringify(oom)} ${chain}`);
      }
      // The headline as a person reads it: the report's and the JSON's words.
      if (view.headline) {
        const shown = await page.$eval("#sl-headline", (e) => e.textContent).catch(() => "");
        const detail = await page.$eval(".sl-unprofiled-text", (e) => e.textContent).catch(() => "");
        check(shown.includes(view.headline.summary) && shown.includes(view.headline.captured) &&
              detail.includes(view.headline.text),
              `${name}: the headline is the report's (${view.headline.summary})`, `${shown} | ${detail}`);
      }
      if (name === largest) {
        check(openMs < 1000, `${name}: the largest bundled capture's page opens in under 1 s (${openMs} ms)`);
        check(bytes < 2 * 1024 * 1024, `${name}: the page weighs under 2 MB (${(bytes / 1024).toFixed(0)} KiB)`);
      }
      // What was drawn, read back from the SVG.
      const drawn = await page.$$eval(".sl-steps .sl-bar", (bars) => bars.map((b) => ({
        rank: b.getAttribute("data-rank"), steps: b.getAttribute("data-steps"), kind: b.getAttribute("data-kind"),
        wall: Number(b.getAttribute("data-wall-ns")),
        segs: [...b.querySelectorAll(".sl-seg")].map((s) => ({
          part: s.getAttribute("data-part"), ns: Number(s.getAttribute("data-ns")), line: Number(s.getAttribute("data-line")),
          where: s.getAttribute("data-where"), height: Number(s.getAttribute("height")), clipped: s.getAttribute("data-clipped") === "true",
        })),
      })));
      const expected = view.ranks.flatMap((r) => r.steps.map((s) => ({ rank: r.label, s })));
      if (name.startsWith("memory")) await checkStackedMemory(page, name, json, view);
      if (name.startsWith("memory")) {
        check(drawn.length === 0 && expected.length === 0, "memory: a snapshot has no step bars");
        const bands = await page.$$eval(".sl-memory .sl-band", (b) => b.map((x) => Number(x.getAttribute("data-bytes"))));
        check(bands.length > 0 && bands[0] === view.memory.top[0].bytes, "memory: the peak's lines drawn as bands, most first",
          JSON.stringify(bands.slice(0, 3)));
      } else {
        check(drawn.length === expected.length && expected.length > 0, `${name}: one bar per step of every rank (${expected.length})`,
          `${drawn.length} drawn`);
        let same = true, detail = "";
        let ratio = null, proportional = true;
        for (const { rank, s } of expected) {
          const bar = drawn.find((d) => d.rank === rank && d.steps === String(s.index));
          if (!bar) { same = false; detail = `${rank} step ${s.index} not drawn`; break; }
          if (bar.kind !== s.kind || Math.abs(bar.wall - s.wallNs) > 1) { same = false; detail = `${rank} step ${s.index}: ${bar.kind} ${bar.wall}`; }
          for (const seg of bar.segs) {
            const want = Math.round(partValue(s, seg.part));
            const line = partLine(view, s, seg.part);
            const where = line >= 0 ? `${view.lines[line].path}:${view.lines[line].line}` : "";
            if (Math.abs(seg.ns - want) > 1 || seg.line !== line || seg.where !== where) {
              same = false;
              detail = `${rank} step ${s.index} ${seg.part}: drew ${seg.ns} ns at ${seg.where}, the JSON says ${want} at ${where}`;
            }
            if (!seg.clipped && seg.ns > 0 && seg.height > 2) {
              const r = seg.height / seg.ns;
              if (ratio === null) ratio = r;
              else if (Math.abs(r - ratio) / ratio > 0.01) proportional = false;
            }
          }
          const sum = bar.segs.reduce((a, x) => a + x.ns, 0);
          if (Math.abs(sum - s.wallNs) > bar.segs.length + 1) { same = false; detail = `${rank} step ${s.index}: parts ${sum} of ${s.wallNs}`; }
        }
        check(same, `${name}: every segment has the JSON's ns and line`, detail);
        check(proportional, `${name}: segment heights in proportion to their time`);
        // The tallest segment's click lands on its line's annotated listing.
        const tallest = drawn.flatMap((b) => b.segs).filter((x) => x.line >= 0).sort((a, b) => b.height - a.height)[0];
        if (tallest) {
          const index = await page.$$eval(".sl-steps .sl-seg", (segs, want) =>
            segs.findIndex((x) => x.getAttribute("data-where") === want.where && x.getAttribute("data-part") === want.part &&
              Number(x.getAttribute("height")) === want.height), tallest);
          await page.locator(".sl-steps .sl-seg").nth(index).click({ force: true });
          const target = await page.$eval(".sl-target", (e) => e.id).catch(() => "");
          const line = view.lines[tallest.line];
          check(target.endsWith(`-${line.line}`), `${name}: a click on the tallest segment shows ${tallest.where}`, target);
        }
        const spans = await page.evaluate(() => document.querySelector(".sl-timeline") !== null);
        check(spans, `${name}: the steady step's timeline is drawn`);
        if (view.ranks.length > 1) {
          // A timeline per rank: picking the second redraws with its step.
          const select = page.locator("#sl-timeline select");
          const options = await select.locator("option").allInnerTexts();
          check(options.length === view.ranks.length && options.some((o) => o.includes("(straggler)")),
            `${name}: a timeline per rank, the straggler named`, options.join(", "));
          await select.selectOption("1");
          const note = await page.locator("#sl-timeline .sl-note").nth(1).innerText();
          check(note.startsWith(`${view.ranks[1].label}, step`), `${name}: picking a rank shows its step`, note);
          await select.selectOption("0");
          // The job's heat map: a click on the straggler's row picks its timeline.
          const heat = page.locator("#sl-job canvas");
          if (check(await heat.count() === 1, `${name}: the ranks × steps heat map is drawn`) && json.job.straggler) {
            const k = json.job.ranks.findIndex((r) => r.label === json.job.straggler.rank);
            await heat.scrollIntoViewIfNeeded();
            const box = await heat.boundingBox();
            const rowH = Math.max(1, Math.min(14, Math.floor(480 / json.job.ranks.length)));
            await page.mouse.click(box.x + 160, box.y + k * rowH + rowH / 2);
            const picked = await page.locator("#sl-timeline .sl-note").nth(1).innerText();
            check(picked.startsWith(`${json.job.straggler.rank}, step`), `${name}: a click on a rank's row shows its timeline`, picked);
          }
        }
      }
      await page.evaluate(() => document.activeElement?.blur());
      await page.screenshot({ path: join(out, `report-${name}.png`), fullPage: true });
      if (args.images && name === "memory-steps") {  // the peak's step, zoomed
        mkdirSync(args.images, { recursive: true });
        await page.click("#sl-memory-peak-step");
        await page.locator("#sl-memory").screenshot({ path: join(args.images, "step-view-memory-step.png") });
      }
      if (args.images && (name === "ranks" || name === "memory" || name === "example")) {
        mkdirSync(args.images, { recursive: true });
        const shots = name === "memory" ? [["#sl-memory", "memory"]]
          : name === "ranks" ? [["#sl-steps", "steps"], ["#sl-timeline", "timeline"]] : [["#sl-lines", "lines"]];
        for (const [selector, picture] of shots)
          await page.locator(selector).screenshot({ path: join(args.images, `step-view-${picture}.png`) });
      }
      await page.close();
    }
    // A job of 1,024 ranks (bench/make_job.py from a real rank's summary, a straggler injected in
    // steps 1 and 3, 0-based: the page numbers steps from 1, as the bars do, so 2 and 4): the merged summaries' page is small, opens fast, and its heat map, straggler
    // and lines are the JSON's.
    {
      const summary = join(tmp, "template.json");
      execFileSync(server, ["report", "--format", "summary", "--profile", unxz("tests/data/multi/fsdp/fsdp_rank0.sqlite.xz"),
        "-o", summary, join(root, "tests/data/multi/fsdp/train_fsdp.py")]);
      const jobDir = join(tmp, "job1024");
      execFileSync("python3", [join(root, "bench/make_job.py"), "--ranks", "1024", "--out", jobDir,
        "--straggler", "777:1,3:30", summary]);
      const html = join(out, "report-job1024.html");
      const job = JSON.parse(execFileSync(server, ["report", "--format", "json", "--merge", jobDir],
        { maxBuffer: 1 << 28, encoding: "utf8" })).job;
      execFileSync(server, ["report", "--format", "html", "--merge", jobDir, "-o", html]);
      const bytes = statSync(html).size;
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const errors = [];
      page.on("pageerror", (e) => errors.push(String(e)));
      const t0 = Date.now();
      await page.goto(pathToFileURL(html).href);
      await page.waitForSelector("body[data-rendered=true]", { timeout: 10000 });
      const openMs = Date.now() - t0;
      check(errors.length === 0, "job of 1,024 ranks: the page renders without errors", errors.join("; "));
      check(bytes < 2 * 1024 * 1024, `job of 1,024 ranks: the page weighs under 2 MB (${(bytes / 1024).toFixed(0)} KiB)`);
      check(openMs < 1000, `job of 1,024 ranks: the page opens in under 1 s (${openMs} ms)`);
      const label = await page.$eval("#sl-job canvas", (c) => c.getAttribute("aria-label")).catch(() => "");
      check(label.includes("1024 ranks") && label.includes(job.straggler.rank),
        "job of 1,024 ranks: the heat map of every rank, the straggler named", label);
      const note = await page.$eval("#sl-job-straggler", (e) => e.textContent).catch(() => "");
      check(job.straggler.rank.startsWith("rank 777 (") && note === `Straggler: ${job.straggler.rank} (steps 2, 4)`,
        "job of 1,024 ranks: the injected straggler and its steps, as the JSON says", note);
      const rows = await page.$$eval("#sl-job-lines tr", (trs) => trs.slice(1).map((t) => t.textContent));
      const first = job.lines[0];
      check(rows.length === Math.min(20, job.lines.length) &&
        rows[0].startsWith(`${first.path.split("/").pop()}:${first.line}`),
        "job of 1,024 ranks: the lines across ranks as the JSON lists them", `${rows.length} ${rows[0]}`);
      await page.screenshot({ path: join(out, "report-job1024.png"), fullPage: true });
      if (args.images) await page.locator("#sl-job").screenshot({ path: join(args.images, "step-view-job.png") });
      await page.close();
      await checkLongJob(browser, summary);
    }
    await everyCapture(browser);
    await checkDiffPage(browser);
    // The dark theme follows the system's.
    const dark = await browser.newPage({ viewport: { width: 1280, height: 900 }, colorScheme: "dark" });
    await dark.goto(pathToFileURL(join(out, "report-example.html")).href);
    await dark.waitForSelector("body[data-rendered=true]");
    const bg = await dark.evaluate(() => getComputedStyle(document.body).backgroundColor);
    check(bg === "rgb(13, 17, 23)", "the page follows a dark system theme", bg);
    await dark.screenshot({ path: join(out, "report-example-dark.png") });
  } finally {
    await browser.close();
    rmSync(tmp, { recursive: true, force: true });
  }
  console.log(`${failures === 0 ? "passed" : `${failures} failed`}`);
  process.exit(failures === 0 ? 0 : 1);
}

main().catch((e) => {
  console.error(e);
  rmSync(tmp, { recursive: true, force: true });
  process.exit(1);
});
