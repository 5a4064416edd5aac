// The extension in a real VS Code: code-server on 127.0.0.1 with the packaged .vsix installed,
// driven by Playwright in Debian's headless Chromium. Opens examples/train_small.py beside its
// real H200 profile and checks what a user sees: the diagnostics in the Problems panel, the
// inlay hint on the hot line, the hover card, the status bar item. Saves a screenshot. With
// --memory-script, --memory-snapshot and --memory-only yes, opens instead a folder holding a
// script and the memory snapshot its run dumped when it ran out of memory: the out-of-memory error in Problems,
// the bytes held at the peak as a hint, the memory summary in the status bar. With
// --baseline-dir (a folder holding train.py, its capture under runs/ and base.summary.json, the
// summary of the run before the change), opens that folder too with `sightline.compareWith` set:
// the regressed line in Problems, its hint with the change and its interval.
//
// usage: node e2e.mjs --vsix sightline.vsix --server build/server/sightline \
//          --script examples/train_small.py --profile train_small_naive.sqlite --screenshot out.png \
//          [--memory-script gpt_mem.py --memory-snapshot oom_snapshot.pickle --memory-only yes]
//          [--baseline-dir DIR --baseline-line N --baseline-text TEXT --baseline-only yes]
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, copyFileSync, writeFileSync, chmodSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
for (const required of ["vsix", "server", "script", "profile", "screenshot"])
  if (!args[required]) throw new Error(`missing --${required}`);
const chromiumPath = args.chromium ?? "/usr/bin/chromium";
const codeServer = join(here, "node_modules", ".bin", "code-server");

const started = Date.now();
const log = (text) => console.log(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${text}`);
let failures = 0;
function check(ok, what, detail = "") {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}${!ok && detail ? `: ${detail}` : ""}`);
  if (!ok) failures++;
  return ok;
}

// A run of its own: home, config, data, extensions, the workspace and the browser profile.
const tmp = mkdtempSync(join(tmpdir(), "sightline-vscode-"));
const home = join(tmp, "home");
const userData = join(tmp, "user-data");
const extensions = join(tmp, "extensions");
const workspace = join(tmp, "workspace");
for (const d of [home, join(userData, "User"), extensions, join(workspace, ".vscode")]) mkdirSync(d, { recursive: true });
copyFileSync(args.script, join(workspace, "train_small.py"));
copyFileSync(args.profile, join(workspace, "train_small_naive.sqlite"));
chmodSync(join(workspace, "train_small.py"), 0o644);
// User settings: the binary (a user-level setting: a workspace value is ignored) and quiet UI.
writeFileSync(
  join(userData, "User", "settings.json"),
  JSON.stringify({
    "workbench.startupEditor": "none",
    "security.workspace.trust.enabled": false,
    "workbench.tips.enabled": false,
    "extensions.ignoreRecommendations": true,
    "telemetry.telemetryLevel": "off",
    "editor.minimap.enabled": false,
    "sightline.serverPath": resolve(args.server),
  }),
);
// The workspace names its profile, as a user would in .vscode/settings.json.
writeFileSync(join(workspace, ".vscode", "settings.json"), JSON.stringify({ "sightline.profiles": ["*.sqlite"], "sightline.heat.enabled": true }),
);
const env = {
  ...process.env,
  HOME: home,
  XDG_CONFIG_HOME: join(home, ".config"),
  XDG_DATA_HOME: join(home, ".local", "share"),
  XDG_CACHE_HOME: join(home, ".cache"),
};

function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.on("error", fail);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

async function waitForHealth(port, ms) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/healthz`);
      if (r.ok) return true;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

let server;
let context;
async function teardown() {
  if (context) await context.close().catch(() => {});
  if (server && server.exitCode === null) {
    try {
      process.kill(-server.pid, "SIGTERM"); // the whole group: a plain kill leaves a watcher child
    } catch {
      // gone already
    }
  }
  if (!process.env.SIGHTLINE_KEEP_TMP) rmSync(tmp, { recursive: true, force: true });
}

async function main() {
  log(`installing ${args.vsix}`);
  const installed = execFileSync(
    codeServer,
    ["--install-extension", resolve(args.vsix), "--extensions-dir", extensions, "--user-data-dir", userData],
    { env, encoding: "utf8" },
  );
  check(/successfully installed/i.test(installed), "the .vsix installs", installed);

  const port = await freePort();
  server = spawn(
    codeServer,
    [
      "--bind-addr",
      `127.0.0.1:${port}`,
      "--auth",
      "none",
      "--disable-telemetry",
      "--disable-update-check",
      "--disable-workspace-trust",
      "--user-data-dir",
      userData,
      "--extensions-dir",
      extensions,
      workspace,
    ],
    { env, detached: true, stdio: ["ignore", "pipe", "pipe"] },
  );
  let serverLog = "";
  server.stdout.on("data", (d) => (serverLog += d));
  server.stderr.on("data", (d) => (serverLog += d));
  if (!check(await waitForHealth(port, 60000), "code-server answers /healthz", serverLog)) return;
  log(`code-server on 127.0.0.1:${port}`);

  context = await chromium.launchPersistentContext(join(tmp, "browser"), {
    executablePath: chromiumPath,
    headless: true,
    viewport: { width: 1500, height: 900 },
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  // The memory folder in a run of its own (--memory-only yes): a second window of one
  // code-server at times starts its server without the user's sightline.serverPath.
  if (args["memory-script"] && args["memory-snapshot"]) {
    await memoryFolder(page, port);
    if (args["memory-only"] === "yes") return;
  }
  // The baseline folder too (--baseline-only yes), for the same reason.
  if (args["baseline-dir"]) {
    await baselineFolder(page, port);
    if (args["baseline-only"] === "yes") return;
  }
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`);
  await page.locator(".explorer-folders-view").getByText("train_small.py").first().waitFor({ timeout: 60000 });
  log("workbench up");

  // Open the script the way a user does: a click in the explorer.
  await page.locator(".explorer-folders-view").getByText("train_small.py").first().click();
  await page.locator(".monaco-editor .view-lines").first().waitFor({ timeout: 20000 });
  log("script open");

  // Status bar item from sightline/profileStatus.
  const status = page.locator(".statusbar .statusbar-item", { hasText: "train_small_naive.sqlite" });
  const statusOk = await status
    .first()
    .waitFor({ timeout: 60000 })
    .then(() => true)
    .catch(() => false);
  const statusText = statusOk ? (await status.first().innerText()).replace(/\s+/g, " ") : await page.locator(".statusbar").innerText();
  check(statusOk && /ms\/step/.test(statusText), "status bar shows the profile", statusText);

  // Problems panel: the static rules, confirmed by the profile, and the profile-only ones.
  await page.keyboard.press("Control+Shift+M");
  const markers = page.locator(".markers-panel");
  await markers.waitFor({ timeout: 20000 }).catch(() => {});
  const wanted = ["sync-in-loop", "dataloader-pin-memory", "missing-non-blocking", "pageable-memcpy", "gpu-idle"];
  let problems = "";
  for (let i = 0; i < 120; i++) {
    problems = (await markers.innerText().catch(() => "")).replace(/\s+/g, " ");
    if (wanted.every((code) => problems.includes(code))) break;
    await page.waitForTimeout(500);
  }
  for (const code of wanted) check(problems.includes(code), `Problems panel lists ${code}`, problems.slice(0, 400));
  check(/measured/.test(problems), "a finding cites the measured cost", problems.slice(0, 400));

  // Go to the hot line (33) with Quick Open ":33".
  await page.locator(".monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+P");
  await page.locator(".quick-input-widget input").waitFor({ timeout: 20000 });
  await page.keyboard.type(":33");
  await page.keyboard.press("Enter");
  await page.waitForTimeout(500);

  // The inlay hint at the end of line 33 (rendered inside the view line).
  const hotLine = page.locator(".monaco-editor .view-line", { hasText: "self.bn(self.conv(x))" }).first();
  let lineText = "";
  for (let i = 0; i < 60; i++) {
    lineText = ((await hotLine.textContent().catch(() => "")) ?? "").replace(/\u00a0/g, " ");
    if (lineText.includes("▮")) break;
    await page.waitForTimeout(500);
  }
  check(/▮ [\d.]+ ms · \d+%/.test(lineText), "inlay hint on line 33", lineText);

  // Hover on `relu` in that line: the cost card with its kernels.
  const word = hotLine.locator("span", { hasText: "relu" }).last();
  const box = await word.boundingBox();
  let hoverText = "";
  if (box) {
    for (let attempt = 0; attempt < 5 && !/kernel/i.test(hoverText); attempt++) {
      await page.mouse.move(box.x + 2, box.y + box.height / 2);
      await page.mouse.move(box.x + 6, box.y + box.height / 2);
      const hover = page.locator(".monaco-hover:visible").first();
      await hover.waitFor({ timeout: 10000 }).catch(() => {});
      hoverText = ((await hover.innerText().catch(() => "")) ?? "").replace(/\s+/g, " ");
    }
  }
  check(/kernel/i.test(hoverText) && /ms/.test(hoverText), "hover card on line 33", hoverText.slice(0, 300));
  log(`hover: ${hoverText.slice(0, 160)}`);

  // The heat background (sightline.heat.enabled): whole-line decorations of the extension's own.
  const heated = await page.locator('.monaco-editor .view-overlays [class*="ced-"]').count();
  check(heated > 0, "heat background on costly lines", `${heated} decorated lines`);

  await page.waitForTimeout(400); // the hover's fade-in
  mkdirSync(dirname(resolve(args.screenshot)), { recursive: true });
  await page.screenshot({ path: args.screenshot });
  log(`screenshot ${args.screenshot}`);

  await stepView(page, statusText);

  // Palette commands. Toggle Hints: the hint leaves line 33, and comes back.
  // The workbench's page, or the newest one when code-server replaced it (a path typed into
  // its file dialog can open a new window and close this one: seen once in CI).
  const current = async () => {
    if (!page.isClosed()) return page;
    const open = context.pages().filter((p) => !p.isClosed());
    const next = open.at(-1) ?? (await context.newPage());
    log(`the workbench page closed; going on in ${next.url() || "a new page"}`);
    if (!next.url() || next.url() === "about:blank") await next.goto(page.url());
    await next.locator(".monaco-workbench").waitFor({ timeout: 60000 });
    return next;
  };
  const palette = async (title) => {
    const p = await current();
    await p.keyboard.press("Escape");
    await p.locator(".monaco-editor .view-lines:visible").first().click({ timeout: 3000 }).catch(() => {});
    await p.keyboard.press("F1");
    await p.locator(".quick-input-widget input").waitFor({ timeout: 20000 });
    await p.keyboard.type(title);
    await p.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().waitFor({ timeout: 20000 });
    await p.keyboard.press("Enter");
  };
  const hintShown = async () =>
    (((await hotLine.textContent().catch(() => "")) ?? "").replace(/\u00a0/g, " ")).includes("▮");
  // Polls `condition` every 250 ms, `tries` times (10 s by default).
  const waitFor = async (condition, tries = 40) => {
    for (let i = 0; i < tries; i++) {
      if (await condition()) return true;
      await new Promise((r) => setTimeout(r, 250));
    }
    return false;
  };
  await palette("Sightline: Toggle Hints");
  check(await waitFor(async () => !(await hintShown())), "Toggle Hints hides the hint");
  await palette("Sightline: Toggle Hints");
  check(await waitFor(hintShown), "Toggle Hints shows it again");

  // Profile This Script with Nsight Systems: a terminal with the nsys lines typed in.
  await palette("Sightline: Profile This Script with Nsight Systems");
  const terminalTab = page.locator(".terminal-tabs-entry, .single-terminal-tab, .pane-header, .action-item", {
    hasText: "Sightline: nsys",
  });
  check(await waitFor(async () => (await terminalTab.count()) > 0), "Profile This Script opens the nsys terminal");

  // Show Profile Summary: a markdown preview of the server's summary.
  await palette("Sightline: Show Profile Summary");
  const previewTab = page.locator(".tabs-container .tab", { hasText: "Preview" });
  check(await waitFor(async () => (await previewTab.count()) > 0), "Show Profile Summary opens a markdown preview");

  // Load Profile…: VS Code's file dialog (in code-server, a path box); the status bar follows.
  const copy = join(workspace, "again.sqlite");
  copyFileSync(args.profile, copy);
  const loaded = page.locator(".statusbar .statusbar-item", { hasText: "again.sqlite" });
  // code-server's path box sometimes drops the typed path on Enter (the server then never hears
  // of it: seen in CI, with the server's log showing no load). The dialog is driven again once
  // then (up to three tries: both of two were dropped once in CI); what is checked is that a
  // picked file gets loaded and shown.
  let picked = false;
  for (let attempt = 0; attempt < 3 && !picked; attempt++) {
    await (await current()).keyboard.press("Escape");
    await palette("Sightline: Load Profile…");
    const dialog = await current();
    const pathBox = dialog.locator(".quick-input-widget input");
    await pathBox.waitFor({ timeout: 20000 });
    await pathBox.fill(copy);
    await dialog
      .locator(".quick-input-list .monaco-list-row", { hasText: "again.sqlite" })
      .first()
      .waitFor({ timeout: 10000 })
      .catch(() => {});
    await dialog.waitForTimeout(500);
    await dialog.keyboard.press("Enter");
    picked = await waitFor(async () => (await loaded.count().catch(() => 0)) > 0, 60);
  }
  check(picked, "Load Profile… loads the picked file", (await page.locator(".statusbar").innerText()).replace(/\s+/g, " "));

  // Restart Server: a new server loads the profile again and the status comes back.
  await palette("Sightline: Restart Server");
  const after = await current();
  const statusAgain = after.locator(".statusbar .statusbar-item", { hasText: "ms/step" });
  await after.waitForTimeout(500);
  check(await waitFor(async () => (await statusAgain.count()) > 0), "Restart Server: the new server's status arrives");
}

// Polls `condition` every 250 ms, `tries` times.
async function pollUntil(condition, tries) {
  for (let i = 0; i < tries; i++) {
    if (await condition()) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

// The step view's frame (a frame inside the webview's frame): the one holding `selector`, or null.
async function webviewFrame(page, selector) {
  let frame = null;
  await pollUntil(async () => {
    for (const f of page.frames()) {
      if ((await f.locator(selector).count().catch(() => 0)) > 0) {
        frame = f;
        return true;
      }
    }
    return false;
  }, 240);
  return frame;
}

// Sightline: Step View from the status bar item: the webview draws the steps of the capture; a
// click on the tallest bar segment reveals its line in the editor; the lens on the training
// loop names the step. Saves a screenshot beside the first one.
async function stepView(page, statusText) {
  const waitFor = pollUntil;
  await page.keyboard.press("Escape");
  await page.locator(".statusbar .statusbar-item", { hasText: "train_small_naive.sqlite" }).first().click();
  // The webview's document is a frame inside a frame: the one that holds the bars.
  const frame = await webviewFrame(page, ".sl-steps .sl-seg");
  if (!check(frame !== null, "the status bar opens the step view with its bars", statusText)) return;
  const bars = await frame.locator(".sl-steps .sl-bar").count();
  check(bars === 6, "the step view draws the capture's six steps", `${bars} bars`);
  const tallest = await frame.$$eval(".sl-steps .sl-seg", (segs) => {
    let best = -1, height = -1;
    segs.forEach((s, i) => {
      const h = Number(s.getAttribute("height"));
      if (Number(s.getAttribute("data-line")) >= 0 && h > height) (best = i), (height = h);
    });
    return { index: best, where: best >= 0 ? segs[best].getAttribute("data-where") : "" };
  });
  const line = Number((tallest.where.match(/:(\d+)$/) ?? [])[1]);
  await frame.locator(".sl-steps .sl-seg").nth(tallest.index).click({ force: true });
  let cursor = "";
  const revealed = await waitFor(async () => {
    cursor = (await page.locator(".statusbar").innerText().catch(() => "")).replace(/\s+/g, " ");
    return new RegExp(`Ln ${line}, Col 1\\b`).test(cursor);
  }, 80);
  check(line > 0 && revealed, `a click on the tallest segment reveals its line (${tallest.where})`, cursor);
  await page.waitForTimeout(300);
  await page.screenshot({ path: args.screenshot.replace(/\.png$/, "-stepview.png") });
  log(`step view: tallest segment at ${tallest.where}`);
  // The lens on the training loop (line 100 of the script).
  await page.locator(".monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+P");
  await page.locator(".quick-input-widget input").waitFor({ timeout: 20000 });
  await page.keyboard.type(":100");
  await page.keyboard.press("Enter");
  const lens = page.locator(".monaco-editor .codelens-decoration", { hasText: "Sightline: step view" });
  check(await waitFor(async () => (await lens.count()) > 0, 80), "a lens on the training loop opens the step view");
  // Back to the hot line for the checks that follow (they read its hint).
  await page.keyboard.press("Control+P");
  await page.locator(".quick-input-widget input").waitFor({ timeout: 20000 });
  await page.keyboard.type(":33");
  await page.keyboard.press("Enter");
  await page.waitForTimeout(500);
}

// A folder with a script and the memory snapshot dumped when its run ran out of memory in
// evaluation (tests/data/memory): found by workspace discovery, as a user would leave it.
async function memoryFolder(page, port) {
  const waitFor = pollUntil;
  const folder = join(tmp, "memory");
  mkdirSync(folder, { recursive: true });
  copyFileSync(args["memory-script"], join(folder, "gpt_mem.py"));
  copyFileSync(args["memory-snapshot"], join(folder, "oom_snapshot.pickle"));
  chmodSync(join(folder, "gpt_mem.py"), 0o644);
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(folder)}`);
  await page.locator(".explorer-folders-view").getByText("gpt_mem.py").first().waitFor({ timeout: 60000 });
  await page.locator(".explorer-folders-view").getByText("gpt_mem.py").first().click();
  await page.locator(".monaco-editor .view-lines").first().waitFor({ timeout: 20000 });
  log("memory folder open");

  const status = page.locator(".statusbar .statusbar-item", { hasText: "GiB" });
  const statusOk = await waitFor(async () => (await status.count()) > 0, 240);
  const statusText = (await page.locator(".statusbar").innerText()).replace(/\s+/g, " ");
  check(statusOk && /peak 63\.54 GiB/.test(statusText) && /out of memory at gpt_mem\.py:73/.test(statusText),
    "status bar shows the memory peak and where it ran out", statusText);

  await page.keyboard.press("Control+Shift+M");
  const markers = page.locator(".markers-panel");
  let problems = "";
  await waitFor(async () => {
    problems = (await markers.innerText().catch(() => "")).replace(/\s+/g, " ");
    return problems.includes("out-of-memory");
  }, 240);
  check(problems.includes("out-of-memory") && problems.includes("asked 24.56 GiB with 14.16 GiB free"),
    "Problems panel lists the out-of-memory error", problems.slice(0, 400));
  check(/\[Ln 73/.test(problems), "the error is on line 73", problems.slice(0, 400));

  // The logits line (60) holds the most at the peak: its hint gives the bytes.
  await page.locator(".monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+P");
  await page.locator(".quick-input-widget input").waitFor({ timeout: 20000 });
  await page.keyboard.type(":60");
  await page.keyboard.press("Enter");
  const logits = page.locator(".monaco-editor .view-line", { hasText: "logits = self.head(self.ln_f(x))" }).first();
  let lineText = "";
  await waitFor(async () => {
    lineText = ((await logits.textContent().catch(() => "")) ?? "").replace(/\u00a0/g, " ");
    return lineText.includes("at peak");
  }, 120);
  check(/▮ 25\.71 GiB at peak · \d+%/.test(lineText), "memory hint on the logits line (60)", lineText);
  const shot = args["memory-only"] === "yes" ? args.screenshot : args.screenshot.replace(/\.png$/, "-memory.png");
  await page.screenshot({ path: shot });
  // The step view of the snapshot: GPU memory stacked by line; a click on the band of the line
  // holding the most at the peak (60, the logits) reveals it in the editor.
  await page.keyboard.press("Escape");
  await page.locator(".statusbar .statusbar-item", { hasText: "GiB" }).first().click();
  const frame = await webviewFrame(page, ".sl-memory .sl-mem-band");
  if (!check(frame !== null, "the step view of the snapshot draws memory stacked by line")) return;
  const first = await frame.locator(".sl-memory .sl-mem-band").first().getAttribute("data-line-no");
  check(first === "60", "its bottom band is line 60 (the most at the peak)", first);
  await frame.locator(".sl-memory .sl-mem-band").first().click({ force: true });
  let cursor = "";
  const revealed = await pollUntil(async () => {
    cursor = (await page.locator(".statusbar").innerText().catch(() => "")).replace(/\s+/g, " ");
    return /Ln 60, Col 1\b/.test(cursor);
  }, 80);
  check(revealed, "a click on a memory band reveals its line", cursor);
  await page.screenshot({ path: shot.replace(/\.png$/, "-stepview.png") });
}

// A folder whose script changed since the baseline run CI kept as a summary: compareWith names
// it; the line the change slowed is in Problems (regressed-since-baseline) and its hint ends in
// the change and its interval's half width.
async function baselineFolder(page, port) {
  const folder = resolve(args["baseline-dir"]);
  const line = Number(args["baseline-line"]);
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(folder)}`);
  await page.locator(".explorer-folders-view").getByText("train.py").first().waitFor({ timeout: 60000 });
  await page.locator(".explorer-folders-view").getByText("train.py").first().click();
  await page.locator(".monaco-editor .view-lines").first().waitFor({ timeout: 20000 });
  log("baseline folder open");
  await page.keyboard.press("Control+Shift+M");
  const markers = page.locator(".markers-panel");
  let problems = "";
  await pollUntil(async () => {
    problems = (await markers.innerText().catch(() => "")).replace(/\s+/g, " ");
    return problems.includes("regressed-since-baseline");
  }, 240);
  check(problems.includes("regressed-since-baseline") && problems.includes("Regressed since the baseline (base.summary.json)"),
    "Problems panel lists the line regressed since the baseline", problems.slice(0, 400));
  check(problems.includes(`[Ln ${line}`), `the regression is on line ${line}`, problems.slice(0, 400));
  await page.locator(".monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+P");
  await page.locator(".quick-input-widget input").waitFor({ timeout: 20000 });
  await page.keyboard.type(`:${line}`);
  await page.keyboard.press("Enter");
  const changed = page.locator(".monaco-editor .view-line", { hasText: args["baseline-text"] }).first();
  let lineText = "";
  await pollUntil(async () => {
    lineText = ((await changed.textContent().catch(() => "")) ?? "").replace(/\u00a0/g, " ");
    return lineText.includes("±");
  }, 120);
  check(/▲ \+[\d.]+ ms ±[\d.]+/.test(lineText), `the hint on line ${line} gives the change and its interval`, lineText);
  await page.screenshot({ path: args.screenshot.replace(/\.png$/, "-baseline.png") });
}

try {
  await main();
} catch (e) {
  check(false, "the run completes", e?.stack ?? String(e));
  const page = context?.pages()[0];
  if (page) await page.screenshot({ path: args.screenshot.replace(/\.png$/, "-failure.png") }).catch(() => {});
} finally {
  await teardown();
}
console.log(failures === 0 ? "all checks passed" : `${failures} check(s) failed`);
process.exit(failures === 0 ? 0 : 1);
