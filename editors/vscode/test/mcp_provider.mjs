// The extension's MCP server definition provider (src/mcp.ts) against a stand-in for VS Code's
// API: with the API (VS Code 1.101+) it registers one `sightline mcp` per workspace folder, whose
// command line, run, answers an MCP initialize; without it (the code-server the e2e test drives
// is 1.100) it registers nothing and says how to add the server by hand. package.json declares
// the provider under the id the code registers.
//
// usage: node mcp_provider.mjs --server build/server/sightline --root REPO
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
const root = resolve(args.root);
const server = resolve(args.server);
const ext = join(root, "editors/vscode");
const tmp = mkdtempSync(join(tmpdir(), "sightline-mcp-provider-"));

let failures = 0;
function check(ok, what, detail = "") {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}${!ok && detail ? `: ${detail}` : ""}`);
  if (!ok) failures++;
}

// A stand-in for the `vscode` module: what src/mcp.ts touches, recording what it is given.
writeFileSync(join(tmp, "fake_vscode.cjs"), `
class EventEmitter { constructor() { this.event = () => ({ dispose() {} }); } fire() { this.fired = (this.fired || 0) + 1; } dispose() {} }
const state = { providers: [], withApi: true };
class McpStdioServerDefinition { constructor(label, command, args, env, version) { Object.assign(this, { label, command, args, env, version }); } }
const api = {
  version: "1.101.0",
  EventEmitter,
  workspace: {
    workspaceFolders: [],
    onDidChangeConfiguration: () => ({ dispose() {} }),
    onDidChangeWorkspaceFolders: () => ({ dispose() {} }),
  },
  __state: state,
};
Object.defineProperty(api, "lm", { get: () => state.withApi ? { registerMcpServerDefinitionProvider: (id, p) => {
  if (state.throws) throw new Error("Extension 'sightline' CANNOT use API proposal: mcpConfigurationProvider.");
  state.providers.push({ id, p }); return { dispose() {} }; } } : undefined });
Object.defineProperty(api, "McpStdioServerDefinition", { get: () => state.withApi ? McpStdioServerDefinition : undefined });
module.exports = api;
`);
execFileSync(join(ext, "node_modules/.bin/esbuild"), [join(ext, "src/mcp.ts"), "--bundle", "--platform=node", "--format=cjs",
  "--external:vscode", `--outfile=${join(tmp, "mcp.cjs")}`, "--log-level=warning"]);
// The bundle's `require("vscode")` made to load the stand-in (one instance, shared with this test).
const bundled = readFileSync(join(tmp, "mcp.cjs"), "utf8");
check(bundled.includes('require("vscode")'), "the bundle asks for vscode");
writeFileSync(join(tmp, "mcp.cjs"), bundled.replaceAll('require("vscode")', `require(${JSON.stringify(join(tmp, "fake_vscode.cjs"))})`));
const require = createRequire(import.meta.url);
const vscode = require(join(tmp, "fake_vscode.cjs"));
const mcp = require(join(tmp, "mcp.cjs"));

const folder = join(tmp, "work");
execFileSync("mkdir", ["-p", folder]);
vscode.workspace.workspaceFolders = [{ name: "work", uri: { scheme: "file", fsPath: folder } },
  { name: "remote", uri: { scheme: "vscode-remote", fsPath: "/elsewhere" } }];
const context = { subscriptions: [], extension: { packageJSON: { version: "0.1.0" } } };
const logged = [];
const settings = { profiles: ["runs/*.sqlite"], hints: { minShare: 0.01 } };
check(mcp.registerMcpServers(context, () => server, () => settings, (l) => logged.push(l)) === true, "registers where the API is");
const [registered] = vscode.__state.providers;
check(registered?.id === mcp.MCP_PROVIDER_ID, "under the id", registered?.id);
const pkg = JSON.parse(readFileSync(join(ext, "package.json"), "utf8"));
check(pkg.contributes.mcpServerDefinitionProviders?.some((p) => p.id === mcp.MCP_PROVIDER_ID), "package.json declares that id");
const defs = registered.p.provideMcpServerDefinitions({});
check(defs.length === 1, "one server per local folder (a remote one left out)", JSON.stringify(defs));
const d = defs[0];
check(d.label === "Sightline" && d.command === server && d.cwd?.fsPath === folder, "its label, command and folder", JSON.stringify(d));
check(JSON.stringify(d.args) === JSON.stringify(["mcp", "--root", folder, "--settings", JSON.stringify(settings)]),
  "its arguments: the folder and the sightline settings", JSON.stringify(d.args));
// The command line, run: an MCP server that answers initialize.
const init = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {},
  clientInfo: { name: "provider-test", version: "1" } } });
const ran = spawnSync(d.command, d.args, { cwd: d.cwd.fsPath, input: init + "\n", timeout: 60000 });
let answer = {};
try { answer = JSON.parse(ran.stdout.toString().split("\n")[0]); } catch {}
check(answer.result?.serverInfo?.name === "sightline" && answer.result?.protocolVersion === "2025-11-25",
  "the registered command answers initialize", ran.stdout.toString().slice(0, 200) + ran.stderr.toString().slice(0, 300));

// VS Code 1.100: the function is there, as a proposed API that throws for this extension.
vscode.__state.throws = true;
const throwing = [];
check(mcp.registerMcpServers({ subscriptions: [] }, () => server, () => ({}), (l) => throwing.push(l)) === false,
  "an API that throws (1.100's proposal) registers nothing and does not throw");
check(/did not register the MCP server .*proposal/.test(throwing.at(-1) ?? ""), "and says why, and how to add it by hand",
  throwing.at(-1));
vscode.__state.throws = false;

vscode.__state.withApi = false;
const before = logged.length;
check(mcp.registerMcpServers({ subscriptions: [] }, () => server, () => ({}), (l) => logged.push(l)) === false,
  "registers nothing in an editor without the API");
check(logged.length === before + 1 && /sightline mcp --root/.test(logged.at(-1)), "and says how to add it by hand", logged.at(-1));
console.log(failures ? `${failures} check(s) failed` : "all MCP provider checks passed");
process.exit(failures ? 1 : 0);
