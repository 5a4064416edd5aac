// Sightline: Step View, a webview panel: the server's `sightline/stepView` data drawn by the one
// renderer (src/stepview, bundled as out/stepview.js). It follows profile reloads and the
// theme; a click on any mark opens its line in an editor.
import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";

export class StepViewPanel {
  private static current: StepViewPanel | undefined;
  private readonly panel: vscode.WebviewPanel;
  private readonly disposables: vscode.Disposable[] = [];

  static show(context: vscode.ExtensionContext, client: LanguageClient | undefined): void {
    if (StepViewPanel.current) {
      StepViewPanel.current.panel.reveal(vscode.ViewColumn.Beside);
      void StepViewPanel.current.refresh(client);
      return;
    }
    StepViewPanel.current = new StepViewPanel(context);
    void StepViewPanel.current.refresh(client);
  }

  // A profile (re)loaded: the open panel shows the new one.
  static profileChanged(client: LanguageClient | undefined): void {
    void StepViewPanel.current?.refresh(client);
  }

  private constructor(context: vscode.ExtensionContext) {
    const out = vscode.Uri.joinPath(context.extensionUri, "out");
    this.panel = vscode.window.createWebviewPanel("sightline.stepView", "Sightline: Step View", vscode.ViewColumn.Beside, {
      enableScripts: true,
      retainContextWhenHidden: true,
      localResourceRoots: [out],
    });
    const webview = this.panel.webview;
    const script = webview.asWebviewUri(vscode.Uri.joinPath(out, "stepview.js"));
    const nonce = Array.from({ length: 24 }, () => Math.floor(Math.random() * 36).toString(36)).join("");
    webview.html = `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src ${webview.cspSource} data:; style-src ${webview.cspSource} 'unsafe-inline'; script-src 'nonce-${nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>Sightline: Step View</title></head>
<body><div id="sightline-root"><p>Loading the step view…</p></div>
<script nonce="${nonce}" src="${script}"></script>
<script nonce="${nonce}">
const vscodeApi = acquireVsCodeApi();
let last = null;
const host = { openLine: (path, line) => vscodeApi.postMessage({ type: "open", path, line }) };
function draw() {
  const root = document.getElementById("sightline-root");
  if (!last) return;
  if (last.error) { root.textContent = last.error; return; }
  SightlineStepView.render(root, last.data, host);
  document.body.dataset.rendered = "true";
}
window.addEventListener("message", (e) => {
  if (e.data.type === "data" || e.data.type === "error") { last = e.data.type === "data" ? { data: e.data.data } : { error: e.data.message }; draw(); }
  if (e.data.type === "redraw") draw();
});
let resize;
window.addEventListener("resize", () => { clearTimeout(resize); resize = setTimeout(draw, 150); });
vscodeApi.postMessage({ type: "ready" });
</script></body></html>`;
    this.disposables.push(
      webview.onDidReceiveMessage((m: { type: string; path?: string; line?: number }) => {
        if (m.type === "open" && typeof m.path === "string" && typeof m.line === "number") void openLine(m.path, m.line);
      }),
      // The canvas reads the theme's colours when it draws.
      vscode.window.onDidChangeActiveColorTheme(() => void webview.postMessage({ type: "redraw" })),
      this.panel.onDidDispose(() => this.dispose()),
    );
  }

  private async refresh(client: LanguageClient | undefined): Promise<void> {
    const webview = this.panel.webview;
    if (!client || !client.isRunning()) {
      await webview.postMessage({ type: "error", message: "The Sightline server is not running." });
      return;
    }
    try {
      const data = await client.sendRequest("sightline/stepView", {});
      if (data === null) await webview.postMessage({ type: "error", message: "No profile is loaded." });
      else await webview.postMessage({ type: "data", data });
    } catch (e) {
      await webview.postMessage({ type: "error", message: `sightline/stepView failed: ${e instanceof Error ? e.message : String(e)}` });
    }
  }

  private dispose(): void {
    StepViewPanel.current = undefined;
    this.disposables.forEach((d) => d.dispose());
  }
}

// Opens `path` at 1-based `line` in the editor group beside the panel's.
async function openLine(path: string, line: number): Promise<void> {
  try {
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(path));
    const at = new vscode.Position(Math.max(0, line - 1), 0);
    await vscode.window.showTextDocument(doc, {
      viewColumn: vscode.ViewColumn.One,
      selection: new vscode.Range(at, at),
      preserveFocus: false,
    });
  } catch {
    void vscode.window.showWarningMessage(`Sightline: cannot open ${path} (the profile names it; map it with sightline.pathMappings).`);
  }
}
