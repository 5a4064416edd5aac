// Sightline for VS Code: a thin client. `sightline serve` does the work (diagnostics, inlay
// hints, hovers, code actions); this file starts it, passes the `sightline` settings, shows
// the profile status in the status bar and turns the server's commands into palette commands.
import * as vscode from "vscode";
import {
  ExecuteCommandRequest,
  InlayHint,
  InlayHintRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
} from "vscode-languageclient/node";
import { registerMcpServers } from "./mcp";
import { StepViewPanel } from "./step_view_panel";

// The server's sightline/profileStatus notification (docs/lsp-extensions.md).
interface ProfileStatus {
  loaded: boolean;
  file?: string;
  format?: string;
  gpus?: string[];
  steps?: number;
  totalGpuNs?: number;
  gpuNsPerStep?: number;
  attributedShare?: number;
  warnings?: string[];
  error?: string;
  compareWith?: string;
  verdict?: string;
  job?: string; // "4 ranks · straggler rank 3 (node3, GPU 3)"
  stepWallNs?: number;
  gpuBusyShare?: number;
  memory?: { peakAllocatedBytes: number; peakReservedBytes: number; summary: string };
  // The status line and the tooltip's lines as the server words them: no figure is formatted here.
  text?: string;
  details?: string[];
}

interface NsysCommands {
  cwd?: string;
  commands?: string[];
  note?: string;
}

let client: LanguageClient | undefined;
let statusItem: vscode.StatusBarItem;
let output: vscode.OutputChannel;
let heat: Heat;

function basename(path: string): string {
  return path.split(/[\\/]/).pop() ?? path;
}

// The binary: the user's (or remote machine's) value only. A workspace value is ignored so that
// opening a folder cannot make VS Code run a program of the folder's choosing.
function serverPath(): string {
  const inspected = vscode.workspace.getConfiguration("sightline").inspect<string>("serverPath");
  if (inspected?.workspaceValue !== undefined || inspected?.workspaceFolderValue !== undefined)
    output.appendLine("sightline.serverPath set by the workspace is ignored; set it in your user settings.");
  return inspected?.globalValue || inspected?.defaultValue || "sightline";
}

// The `sightline` settings section as the server reads it.
function settingsSection(): object {
  return JSON.parse(JSON.stringify(vscode.workspace.getConfiguration().get("sightline") ?? {}));
}

function showStatus(status: ProfileStatus): void {
  const tooltip = new vscode.MarkdownString(undefined, true);
  if (!status.loaded) {
    statusItem.text = "$(circle-slash) Sightline: no profile";
    // What the server and the profile say goes in as text: a profile's names are someone else's.
    tooltip.appendMarkdown("**Sightline**: no profile loaded\n\n");
    tooltip.appendText(status.error ?? "");
    tooltip.appendMarkdown("\n\nClick: load a profile");
    statusItem.command = "sightline.pickProfile";
    statusItem.backgroundColor = undefined;
  } else {
    const warnings = status.warnings ?? [];
    statusItem.text =
      `$(pulse) ${status.text ?? basename(status.file ?? "")}` +
      (warnings.length > 0 ? ` $(warning) ${warnings.length}` : "");
    tooltip.appendMarkdown("**Sightline** · ");
    tooltip.appendText(`${status.file} (${status.format})`);
    tooltip.appendMarkdown("\n\n");
    for (const line of status.details ?? []) {
      tooltip.appendText(line);
      tooltip.appendMarkdown("\n\n");
    }
    if (status.verdict) tooltip.appendMarkdown("(the summary says why)\n\n");
    if (status.job) {
      tooltip.appendText(`Job: ${status.job}`);
      tooltip.appendMarkdown("\n\n");
    }
    if (status.compareWith) {
      tooltip.appendText(`Compared with ${basename(status.compareWith)}`);
      tooltip.appendMarkdown("\n\n");
    }
    for (const w of warnings) {
      tooltip.appendMarkdown("$(warning) ");
      tooltip.appendText(w);
      tooltip.appendMarkdown("\n\n");
    }
    tooltip.appendMarkdown("Click: step view (Sightline: Show Profile Summary for the text)");
    statusItem.command = "sightline.stepView";
    statusItem.backgroundColor = warnings.length > 0 ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
  }
  statusItem.tooltip = tooltip;
  statusItem.show();
}

async function serverCommand<T>(command: string, args: unknown[] = []): Promise<T | undefined> {
  if (!client || !client.isRunning()) {
    void vscode.window.showWarningMessage("Sightline: the server is not running (open a Python file first).");
    return undefined;
  }
  try {
    return (await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args })) as T;
  } catch (e) {
    void vscode.window.showErrorMessage(`Sightline: ${command} failed: ${e instanceof Error ? e.message : String(e)}`);
    return undefined;
  }
}

// What the server puts in each inlay hint's `data` (docs/lsp-extensions.md).
interface HintData {
  kind: "cost" | "rollup" | "gone";
  gpuNs: number;
  perStep: boolean;
  share: number; // of all GPU time, 0..1
  forwardNs: number;
  backwardNs: number;
  deltaNs?: number;
}

// Optional background tint on costly lines (sightline.heat.enabled): each cost hint's share of
// all GPU time (its data.share), in five steps of opacity.
class Heat {
  private readonly levels = [0.06, 0.1, 0.15, 0.22, 0.3].map((alpha) =>
    vscode.window.createTextEditorDecorationType({
      isWholeLine: true,
      backgroundColor: `rgba(255, 110, 40, ${alpha})`,
      overviewRulerColor: `rgba(255, 110, 40, ${alpha * 2})`,
      overviewRulerLane: vscode.OverviewRulerLane.Right,
    }),
  );
  private timer: NodeJS.Timeout | undefined;

  enabled(): boolean {
    return vscode.workspace.getConfiguration("sightline").get<boolean>("heat.enabled", false);
  }

  schedule(delayMs = 300): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.paint(), delayMs);
  }

  private async paint(): Promise<void> {
    for (const editor of vscode.window.visibleTextEditors) {
      if (editor.document.languageId !== "python") continue;
      const ranges: vscode.Range[][] = this.levels.map(() => []);
      if (this.enabled() && client?.isRunning()) {
        const doc = editor.document;
        let hints: InlayHint[] | null = null;
        try {
          hints = await client.sendRequest(InlayHintRequest.type, {
            textDocument: { uri: doc.uri.toString() },
            range: { start: { line: 0, character: 0 }, end: { line: doc.lineCount, character: 0 } },
          });
        } catch {
          hints = null;
        }
        for (const hint of hints ?? []) {
          // The server's figures ride in the hint's data (docs/lsp-extensions.md), never the label.
          const data = hint.data as HintData | undefined;
          if (data?.kind !== "cost" || typeof data.share !== "number" || hint.position.line >= doc.lineCount) continue;
          const level = Math.min(this.levels.length - 1, Math.floor(data.share * 10));
          ranges[level].push(doc.lineAt(hint.position.line).range);
        }
      }
      this.levels.forEach((type, i) => editor.setDecorations(type, ranges[i]));
    }
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.levels.forEach((t) => t.dispose());
  }
}

async function startClient(context: vscode.ExtensionContext): Promise<void> {
  const serverOptions: ServerOptions = { command: serverPath(), args: ["serve"] };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file", language: "python" }],
    // didChangeConfiguration carries the section; workspace/configuration is answered from it.
    synchronize: { configurationSection: "sightline" },
    initializationOptions: { settings: settingsSection() },
    outputChannel: output,
    middleware: {
      // The step view's lens on the training loop, unless turned off.
      provideCodeLenses: (document, token, next) =>
        vscode.workspace.getConfiguration("sightline").get<boolean>("stepView.codeLens", true)
          ? next(document, token)
          : [],
    },
  };
  client = new LanguageClient("sightline", "Sightline", serverOptions, clientOptions);
  context.subscriptions.push(
    client.onNotification("sightline/profileStatus", (status: ProfileStatus) => {
      showStatus(status);
      heat.schedule(0);
      StepViewPanel.profileChanged(client);
    }),
  );
  try {
    await client.start();
  } catch (e) {
    statusItem.text = "$(error) Sightline";
    statusItem.tooltip = `Sightline could not start \`${serverPath()}\`: set sightline.serverPath in your user settings.`;
    statusItem.show();
    void vscode.window.showErrorMessage(
      `Sightline: could not start the server (${serverPath()}): ${e instanceof Error ? e.message : String(e)}`,
    );
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("Sightline");
  statusItem = vscode.window.createStatusBarItem("sightline.status", vscode.StatusBarAlignment.Left, 10);
  statusItem.name = "Sightline";
  statusItem.text = "$(sync~spin) Sightline";
  statusItem.tooltip = "Sightline: starting";
  statusItem.show();
  heat = new Heat();
  context.subscriptions.push(output, statusItem, heat);

  const register = (id: string, run: (...args: unknown[]) => unknown) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, run));
  register("sightline.pickProfile", async () => {
    const picked = await vscode.window.showOpenDialog({
      canSelectMany: false,
      openLabel: "Load profile",
      filters: { "Profiles (nsys, PyTorch profiler)": ["nsys-rep", "sqlite", "json", "gz"], "All files": ["*"] },
    });
    if (picked && picked.length > 0) await serverCommand("sightline.loadProfile", [picked[0].fsPath]);
  });
  register("sightline.reload", () => serverCommand("sightline.reloadProfiles"));
  register("sightline.stepView", () => StepViewPanel.show(context, client));
  register("sightline.summary", async () => {
    const markdown = await serverCommand<string>("sightline.showProfileSummary");
    if (markdown === undefined) return;
    const doc = await vscode.workspace.openTextDocument({ language: "markdown", content: String(markdown) });
    try {
      await vscode.commands.executeCommand("markdown.showPreview", doc.uri);
    } catch {
      await vscode.window.showTextDocument(doc);
    }
  });
  register("sightline.hints.toggle", async () => {
    const on = await serverCommand<boolean>("sightline.toggleHints");
    if (on !== undefined) void vscode.window.setStatusBarMessage(`Sightline hints ${on ? "on" : "off"}`, 3000);
    heat.schedule(0);
  });
  register("sightline.restart", async () => {
    statusItem.text = "$(sync~spin) Sightline: restarting";
    statusItem.tooltip = "Sightline: restarting the server";
    if (client) await client.restart();
    else await startClient(context);
  });
  register("sightline.profileInTerminal", async () => {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.languageId !== "python") {
      void vscode.window.showWarningMessage("Sightline: open the training script first.");
      return;
    }
    const r = await serverCommand<NsysCommands>("sightline.profileWithNsys", [editor.document.uri.toString()]);
    if (!r || !r.commands || r.commands.length === 0) return;
    const terminal = vscode.window.createTerminal({ name: "Sightline: nsys", cwd: r.cwd });
    terminal.show();
    // Typed, not run: the user reads it and presses Enter.
    terminal.sendText(r.commands.join(" && \\\n  "), false);
    if (r.note) void vscode.window.showInformationMessage(`Sightline: ${r.note}`);
  });

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      // Also after a failed start: the error asks for this setting, and it should take at once.
      if (e.affectsConfiguration("sightline.serverPath")) {
        await client?.stop().catch(() => {});
        client = undefined;
        await startClient(context);
      }
      if (e.affectsConfiguration("sightline")) heat.schedule();
    }),
    vscode.window.onDidChangeVisibleTextEditors(() => heat.schedule(0)),
    vscode.workspace.onDidChangeTextDocument((e) => {
      if (e.document.languageId === "python" && heat.enabled()) heat.schedule();
    }),
  );
  // The language server first: nothing the agent's registration does may keep it from starting.
  await startClient(context);
  try {
    registerMcpServers(context, serverPath, settingsSection, (line) => output.appendLine(line));
  } catch (e) {
    output.appendLine(`The MCP server was not registered: ${e instanceof Error ? e.message : String(e)}`);
  }
}

export async function deactivate(): Promise<void> {
  if (client) await client.stop();
}
