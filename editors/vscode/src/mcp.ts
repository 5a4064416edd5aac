// The MCP server (`sightline mcp`, docs/agents.md) registered with the editor's agent through the
// MCP server definition provider API (VS Code 1.101 and later): one server per workspace folder,
// with the `sightline` settings the language server gets. An older editor has no such API: then
// nothing is registered, and the output channel says how to add the server by hand.
import * as vscode from "vscode";

// The parts of the API this uses, as VS Code 1.101 declares them (the extension builds against
// 1.100's types so that it still runs there).
interface McpStdioServerDefinition {
  cwd?: vscode.Uri;
}
type McpStdioServerDefinitionCtor = new (
  label: string,
  command: string,
  args?: string[],
  env?: Record<string, string | number | null>,
  version?: string,
) => McpStdioServerDefinition;
interface McpServerDefinitionProvider {
  onDidChangeMcpServerDefinitions?: vscode.Event<void>;
  provideMcpServerDefinitions(token: vscode.CancellationToken): McpStdioServerDefinition[];
}
interface LanguageModelApi {
  registerMcpServerDefinitionProvider?: (id: string, provider: McpServerDefinitionProvider) => vscode.Disposable;
}

export const MCP_PROVIDER_ID = "sightline.mcp";

// The server's command line for one folder: what the provider gives the editor.
export function mcpArguments(folder: string, settings: object): string[] {
  return ["mcp", "--root", folder, "--settings", JSON.stringify(settings)];
}

// Registers the provider; false when this editor has no MCP API.
export function registerMcpServers(
  context: vscode.ExtensionContext,
  serverPath: () => string,
  settings: () => object,
  log: (line: string) => void,
): boolean {
  const api = (vscode as unknown as { lm?: LanguageModelApi }).lm;
  const Definition = (vscode as unknown as { McpStdioServerDefinition?: McpStdioServerDefinitionCtor })
    .McpStdioServerDefinition;
  if (!api?.registerMcpServerDefinitionProvider || !Definition) {
    log(
      `This editor (VS Code ${vscode.version}) cannot register MCP servers (1.101 or later can): add ` +
        "`sightline mcp --root FOLDER` to your agent's MCP servers by hand (docs/agents.md).",
    );
    return false;
  }
  const byHand =
    "add `sightline mcp --root FOLDER` to your agent's MCP servers by hand (docs/agents.md).";
  const changed = new vscode.EventEmitter<void>();
  const version = (context.extension?.packageJSON as { version?: string } | undefined)?.version;
  const provider: McpServerDefinitionProvider = {
    onDidChangeMcpServerDefinitions: changed.event,
    provideMcpServerDefinitions: () =>
      (vscode.workspace.workspaceFolders ?? [])
        .filter((folder) => folder.uri.scheme === "file")
        .map((folder, _, all) => {
          const label = all.length > 1 ? `Sightline (${folder.name})` : "Sightline";
          const definition = new Definition(label, serverPath(), mcpArguments(folder.uri.fsPath, settings()), {}, version);
          definition.cwd = folder.uri;
          return definition;
        }),
  };
  // VS Code 1.100 has the function as a proposed API, which throws for an extension that did not
  // ask for the proposal: the language server must start all the same.
  let registration: vscode.Disposable;
  try {
    registration = api.registerMcpServerDefinitionProvider(MCP_PROVIDER_ID, provider);
  } catch (e) {
    changed.dispose();
    log(
      `This editor (VS Code ${vscode.version}) did not register the MCP server ` +
        `(${e instanceof Error ? e.message : String(e)}): ${byHand}`,
    );
    return false;
  }
  context.subscriptions.push(
    changed,
    registration,
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("sightline")) changed.fire();
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => changed.fire()),
  );
  log("Registered the Sightline MCP server for the editor's agent (sightline mcp).");
  return true;
}
