// `sightline mcp` driven by the protocol's own client (@modelcontextprotocol/sdk, pinned by
// package-lock.json) over stdio, on workspaces made of real captures in tests/data: an eager GPT
// capture, the same script compiled (with its Inductor cache), a 2-rank DDP job (one trace per
// rank, loaded as one profile) and a memory snapshot with an out-of-memory error. For each:
// initialize, list the tools, call every tool, and check each figure against what `sightline
// report --format json` (or `diff --format json`) gives for the same files. Then hostile inputs:
// paths out of the workspace (by `..` and by a symbolic link), a huge n, wrong types, unknown
// tools and arguments: each a tool error, never a protocol error or a crash. Last, the budget of
// docs/agents.md: the verdict and the lines to change in under 2 KB of tool output.
//
// usage: node mcp.mjs --server build/server/sightline --root REPO --out DIR
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
for (const required of ["server", "root", "out"]) if (!args[required]) throw new Error(`missing --${required}`);
const root = resolve(args.root);
const server = resolve(args.server);
const out = resolve(args.out);
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

let failures = 0;
function check(ok, what, detail = "") {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}${!ok && detail ? `: ${detail}` : ""}`);
  if (!ok) failures++;
  return ok;
}
function same(a, b, what) {
  const ja = JSON.stringify(a), jb = JSON.stringify(b);
  return check(ja === jb, what, `${ja} != ${jb}`);
}

// --- the workspaces -----------------------------------------------------------------------------
const runs = join(root, "tests/data/capture/runs");
function workspace(name, files) {
  const dir = join(out, name);
  mkdirSync(dir, { recursive: true });
  for (const [from, to] of files) {
    const dest = join(dir, to);
    if (from.endsWith(".xz") && !to.endsWith(".xz")) writeFileSync(dest, execFileSync("xz", ["-dc", from], { maxBuffer: 1 << 30 }));
    else copyFileSync(from, dest);
  }
  return dir;
}
const eager = workspace("eager", [
  [join(runs, "gpt_nsys.sqlite.xz"), "gpt_nsys.sqlite"],
  [join(runs, "gpt_nsys.steps.json"), "gpt_nsys.steps.json"],
  [join(root, "tests/data/capture/gpt.py"), "gpt.py"],
]);
const compiled = workspace("compiled", [
  [join(runs, "compiled_nsys.sqlite.xz"), "compiled_nsys.sqlite"],
  [join(runs, "compiled_nsys.steps.json"), "compiled_nsys.steps.json"],
  [join(root, "tests/data/capture/gpt.py"), "gpt.py"],
]);
execFileSync("tar", ["-xJf", join(runs, "compiled_cache.tar.xz"), "-C", compiled]);
const ranks = workspace("ranks", [
  [join(runs, "ddp_torch.rank0.pt.trace.json.gz"), "ddp_torch.rank0.pt.trace.json.gz"],
  [join(runs, "ddp_torch.rank1.pt.trace.json.gz"), "ddp_torch.rank1.pt.trace.json.gz"],
  [join(runs, "ddp_torch.steps.json"), "ddp_torch.steps.json"],
  [join(root, "tests/data/capture/train_ddp.py"), "train_ddp.py"],
]);
const memory = workspace("memory", [
  [join(root, "tests/data/memory/gpt_oom_fwd.pickle.xz"), "gpt_oom_fwd.pickle"],
  [join(root, "tests/data/memory/gpt_mem.py"), "gpt_mem.py"],
]);
// The compiled run's baseline: the eager run's summary, as CI keeps it (docs/ci.md).
execFileSync(server, ["report", "--format", "summary", "--profile", "gpt_nsys.sqlite", "-o",
  join(compiled, "eager.summary.json"), "gpt.py"], { cwd: eager });

function report(dir, profiles, script) {
  const argv = ["report", "--format", "json"];
  for (const p of profiles) argv.push("--profile", p);
  argv.push(script);
  return JSON.parse(execFileSync(server, argv, { cwd: dir, maxBuffer: 1 << 28 }).toString());
}

async function connect(dir) {
  const transport = new StdioClientTransport({ command: server, args: ["mcp", "--root", dir], cwd: dir, stderr: "pipe" });
  const client = new Client({ name: "sightline-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
}
async function call(client, name, args = {}) {
  const result = await client.callTool({ name, arguments: args });
  return { result, data: result.structuredContent, text: result.content?.[0]?.text ?? "", size: JSON.stringify(result).length };
}

// The report's line of a file (by local path relative to the workspace) or undefined.
function reportLine(rep, dir, path, line) {
  for (const f of rep.files) {
    if (f.local_path !== join(dir, path) && f.local_path !== path) continue;
    return f.lines.find((l) => l.line === line);
  }
  return undefined;
}

const TOOLS = ["step_verdict", "top_lines", "line_cost", "memory_at_peak", "oom", "ranks", "compare", "capture_command"];

// --- eager: every tool's figures against the report ----------------------------------------------
async function checkEager() {
  const client = await connect(eager);
  const version = client.getServerVersion();
  check(version?.name === "sightline", "initialize: the server names itself", JSON.stringify(version));
  const { tools } = await client.listTools();
  same(tools.map((t) => t.name).sort(), [...TOOLS].sort(), "tools/list: the eight tools");
  check(tools.every((t) => t.inputSchema?.type === "object" && t.outputSchema?.type === "object"),
    "every tool has input and output schemas");
  const rep = report(eager, ["gpt_nsys.sqlite"], "gpt.py");
  const v = rep.verdict;

  const verdict = await call(client, "step_verdict");
  check(!verdict.result.isError, "step_verdict answers", verdict.text);
  for (const key of ["bound", "captured_bound", "wall_ns", "unprofiled_wall_ns", "unprofiled_busy_share", "capture_overhead_ns"])
    same(verdict.data[key], v[key], `step_verdict ${key} = report's`);
  same(verdict.data.causes.map((c) => [c.cause, c.ns_per_step, c.captured_ns_per_step]),
    v.causes.map((c) => [c.cause, c.ns_per_step, c.captured_ns_per_step]), "step_verdict causes = report's");
  same(verdict.data.causes[0].lines.map((l) => [l.line, l.ns, l.count]),
    v.causes[0].lines.slice(0, 3).map((l) => [l.line, l.ns, l.count]), "step_verdict: the cause's first three lines = report's");
  same(verdict.data.causes[0].lines_total, v.causes[0].lines.length, "step_verdict: the lines' total said");
  same(verdict.data.changes.map((c) => [c.change, c.ns_per_step]), v.changes.map((c) => [c.change, c.ns_per_step]),
    "step_verdict changes = report's");
  check(verdict.text.includes("Try") && verdict.text.includes("gpt.py:32"), "step_verdict text: the story with Try and the lines");
  // docs/agents.md: "why is my step slow" answered in under 2 KB.
  check(verdict.size < 2048, `step_verdict in under 2 KB of tool output (${verdict.size} bytes)`);

  for (const [by, per, pass, field] of [["self", "step", "all", "gpu_ns"], ["inclusive", "total", "backward", "inclusive_backward_ns"],
    ["self", "step", "forward", "forward_ns"]]) {
    const top = await call(client, "top_lines", { by, per, pass, n: 5 });
    const all = rep.files.flatMap((f) => f.lines.map((l) => ({ path: f.local_path, ...l }))).filter((l) => l[field] > 0)
      .sort((a, b) => b[field] - a[field]);
    same(top.data.lines.map((l) => [l.line, l[field === "gpu_ns" ? "gpu_ns" : field] ?? null]).slice(0, 1).map((x) => x[0]),
      [all[0].line], `top_lines ${by}/${pass}: the first line = report's`);
    same(top.data.lines_total, all.length, `top_lines ${by}/${pass}: lines_total = report's lines with such time`);
    same(top.data.lines_more, Math.max(0, all.length - 5), `top_lines ${by}/${pass}: "N more"`);
    for (const l of top.data.lines) {
      const r = reportLine(rep, eager, l.path, l.line);
      same([l.gpu_ns, l.forward_ns, l.backward_ns, l.inclusive_ns, l.share], [r.gpu_ns, r.forward_ns, r.backward_ns, r.inclusive_ns, r.share],
        `top_lines ${by}/${pass} gpt.py:${l.line} = report's`);
    }
    same(top.data.steps, rep.steps, `top_lines ${by}/${pass}: steps = report's`);
    same(top.data.per_step_divisor, per === "step" ? rep.steps : 1, `top_lines ${by}/${pass}: the divisor for ${per}`);
  }

  const line = v.causes[0].lines[0].line;
  const cost = await call(client, "line_cost", { path: `gpt.py:${line}` });
  same(cost.data.cost, reportLine(rep, eager, "gpt.py", line), `line_cost gpt.py:${line} = the report's line, field for field`);
  check(cost.text.includes("GPU") && cost.data.text?.length > 0, "line_cost: text and the line's source");

  const command = await call(client, "capture_command");
  const steps = JSON.parse(readFileSync(join(eager, "gpt_nsys.steps.json"), "utf8"));
  same(command.data.argv, ["sightline", "capture", "-o", "sightline-capture", "--", ...steps.command],
    "capture_command: the capture's own command, into a name no capture here has");
  check(command.data.next.includes('compare {"baseline": "gpt_nsys.sqlite"}'), "capture_command: how to compare after", command.data.next);
  const mine = await call(client, "capture_command", { script: "gpt.py", nproc: 2, profiler: "torch" });
  same(mine.data.command, "sightline capture --profiler torch -o sightline-capture -- torchrun --nproc_per_node=2 gpt.py", "capture_command for a script");

  const mem = await call(client, "memory_at_peak");
  check(mem.result.isError && /no GPU memory/.test(mem.text), "memory_at_peak without memory records: a tool error that says how to get them", mem.text);

  const { resources } = await client.listResources();
  const annotated = resources.find((r) => r.uri === "sightline://annotated/gpt.py");
  check(annotated, "resources: the annotated gpt.py");
  if (annotated) {
    const read = await client.readResource({ uri: annotated.uri });
    check(read.contents[0].text.includes("F.scaled_dot_product_attention"), "the annotated file holds the script's lines");
  }
  const page = await client.readResource({ uri: "sightline://page" });
  const pagePath = page.contents[0].text;
  check(existsSync(pagePath) && readFileSync(pagePath, "utf8").slice(0, 200).toLowerCase().includes("<!doctype html"),
    "resources: the page's path, written", pagePath);

  await hostile(client);
  await client.close();
}

// --- hostile inputs: tool errors ----------------------------------------------------------------
async function hostile(client) {
  symlinkSync("/etc", join(eager, "etc-link"));
  const cases = [
    ["line_cost", { path: "../../../etc/passwd", line: 1 }, /outside the workspace/],
    ["line_cost", { path: "/etc/passwd", line: 1 }, /outside the workspace/],
    ["line_cost", { path: "etc-link/passwd", line: 1 }, /outside the workspace/],
    ["top_lines", { path: "etc-link/passwd" }, /outside the workspace/],
    ["compare", { baseline: "../gpt_nsys.sqlite" }, /outside the workspace/],
    ["top_lines", { n: 1e12 }, /must be from 1 to 200/],
    ["top_lines", { n: -1 }, /must be from 1 to 200/],
    ["top_lines", { n: "5" }, /whole number/],
    ["top_lines", { n: 2.5 }, /whole number/],
    ["top_lines", { by: 7 }, /must be a string/],
    ["top_lines", { by: "everything" }, /one of self, inclusive/],
    ["top_lines", { extra: true }, /unknown argument/],
    ["line_cost", {}, /missing argument "path"/],
    ["line_cost", { path: "gpt.py", line: 100000 }, /has \d+ lines/],
    ["line_cost", { path: "x".repeat(5000), line: 1 }, /longer than 4096/],
    ["compare", { baseline: "gpt.py" }, /./],
    ["compare", { fail_on: "step:+lots" }, /fail_on/],
    ["no_such_tool", {}, /unknown tool/],
  ];
  for (const [name, args, expect] of cases) {
    let result;
    try {
      result = await client.callTool({ name, arguments: args });
    } catch (e) {
      check(false, `hostile ${name} ${JSON.stringify(args).slice(0, 60)}: a tool error, not a protocol error`, e.message);
      continue;
    }
    check(result.isError && expect.test(result.content[0].text),
      `hostile ${name} ${JSON.stringify(args).slice(0, 60)}: tool error "${result.content[0].text.slice(0, 80)}"`);
  }
  // The server still answers.
  const again = await call(client, "top_lines", { n: 1 });
  check(!again.result.isError, "the server answers after the hostile calls");
}

// --- compiled: the verdict and the compare tool against diff -------------------------------------
async function checkCompiled() {
  const client = await connect(compiled);
  const rep = report(compiled, ["compiled_nsys.sqlite"], "gpt.py");
  const verdict = await call(client, "step_verdict");
  same([verdict.data.bound, verdict.data.wall_ns, verdict.data.unprofiled_wall_ns], [rep.verdict.bound, rep.verdict.wall_ns, rep.verdict.unprofiled_wall_ns],
    "compiled: step_verdict = report's");
  same(verdict.data.changes.map((c) => c.change), rep.verdict.changes.map((c) => c.change), "compiled: the changes (no torch.compile for a compiled model)");
  check(!verdict.data.changes.some((c) => c.change === "torch-compile"), "compiled: torch.compile is not advised again");
  const top = await call(client, "top_lines", { n: 3 });
  for (const l of top.data.lines) {
    const r = reportLine(rep, compiled, l.path, l.line);
    same([l.gpu_ns, l.inclusive_ns], [r.gpu_ns, r.inclusive_ns], `compiled: top_lines gpt.py:${l.line} = report's`);
  }
  const cmp = await call(client, "compare", { baseline: "eager.summary.json", fail_on: "step:+5%", n: 5 });
  // diff exits 1 when the gate fails: its JSON is on standard output all the same.
  const ran = spawnSync(server, ["diff", "--format", "json", "--fail-on", "step:+5%", "eager.summary.json", "compiled_nsys.sqlite"],
    { cwd: compiled });
  check(ran.status === 0 || ran.status === 1, "diff ran", ran.stderr?.toString());
  const diff = JSON.parse(ran.stdout.toString());
  same(cmp.data.step, diff.step, "compare: the step's change = diff's");
  same(cmp.data.gate, diff.gate, "compare: the gate = diff's");
  same(cmp.data.failed, diff.failed, "compare: the verdict = diff's");
  same(cmp.data.lines.map((l) => [l.new_line, l.change.delta_ns]), diff.lines.slice(0, 5).map((l) => [l.new_line, l.change.delta_ns]),
    "compare: the lines' changes = diff's");
  await client.close();
}

// --- two ranks: ranks and the per-rank spread ----------------------------------------------------
async function checkRanks() {
  const client = await connect(ranks);
  const rep = report(ranks, ["ddp_torch.rank0.pt.trace.json.gz", "ddp_torch.rank1.pt.trace.json.gz"], "train_ddp.py");
  const r = await call(client, "ranks");
  same(r.data.ranks.map((k) => [k.label, k.median_step_ns, k.comm_exposed_ns]), rep.ranks.map((k) => [k.label, k.median_step_ns, k.comm_exposed_ns]),
    "ranks: each rank = report's");
  same(r.data.ranks_total, 2, "ranks: two");
  same(r.data.late_rank?.label, rep.verdict.late_rank?.label, "ranks: the rank the others wait for = report's");
  same(r.data.job?.bound, rep.job?.bound, "ranks: the job = report's");
  check(r.text.includes("Straggler"), "ranks: the story's straggler row");
  const top = await call(client, "top_lines", { n: 3 });
  for (const l of top.data.lines) {
    const x = reportLine(rep, ranks, l.path, l.line);
    same([l.gpu_ns, l.rank_ns, l.slowest_rank], [x.gpu_ns, x.rank_ns, x.slowest_rank], `ranks: top_lines train_ddp.py:${l.line} per rank = report's`);
  }
  const verdict = await call(client, "step_verdict");
  same([verdict.data.bound, verdict.data.wall_ns], [rep.verdict.bound, rep.verdict.wall_ns], "ranks: step_verdict = report's");
  await client.close();
}

// --- memory: the peak and the out-of-memory error ------------------------------------------------
async function checkMemory() {
  const client = await connect(memory);
  const rep = report(memory, ["gpt_oom_fwd.pickle"], "gpt_mem.py");
  const m = rep.memory;
  const peak = await call(client, "memory_at_peak", { n: 3 });
  same([peak.data.peak_allocated_bytes, peak.data.peak_reserved_bytes, peak.data.peak_phase], [m.peak_allocated_bytes, m.peak_reserved_bytes, m.peak_phase],
    "memory_at_peak: the peak = report's");
  same(peak.data.top_lines.map((l) => [l.line, l.bytes]), m.top_lines.slice(0, 3).map((l) => [l.line, l.bytes]), "memory_at_peak: the holders = report's");
  same(peak.data.top_lines_more, m.top_lines.length - 3, "memory_at_peak: \"N more\"");
  const oom = await call(client, "oom");
  same([oom.data.oom.line, oom.data.oom.requested_bytes, oom.data.oom.free_bytes], [m.oom.line, m.oom.requested_bytes, m.oom.free_bytes],
    "oom: where and how much = report's");
  same(oom.data.oom.stack.map((f) => f.line), m.oom.stack.slice(0, 10).map((f) => f.line), "oom: the call chain = report's");
  const verdict = await call(client, "step_verdict");
  check(verdict.result.isError && /memory snapshot/.test(verdict.text), "step_verdict on a snapshot: says to ask the memory tools", verdict.text);
  const cost = await call(client, "line_cost", { path: "gpt_mem.py", line: m.top_lines[0].line });
  same(cost.data.cost.memory_at_peak_bytes, reportLine(rep, memory, "gpt_mem.py", m.top_lines[0].line).memory_at_peak_bytes,
    "line_cost: a line's memory at the peak = report's");
  await client.close();
}

for (const [name, run] of [["eager", checkEager], ["compiled", checkCompiled], ["ranks", checkRanks], ["memory", checkMemory]]) {
  console.log(`--- ${name}`);
  try {
    await run();
  } catch (e) {
    check(false, `${name}: ran`, e.stack);
  }
}
console.log(failures ? `${failures} check(s) failed` : "all MCP checks passed");
process.exit(failures ? 1 : 0);
