// The page's and the panel's number formatters (src/stepview/format.ts) against the table the
// server's are tested on (tests/data/units.json, analysis/features/units.h): one formatter per
// unit, so a figure reads the same in the terminal, the editor and the page.
//
// usage: node units.mjs [REPO]   (run from editors/vscode, whose esbuild bundles format.ts)
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(process.argv[2] ?? join(here, "..", "..", ".."));
const table = JSON.parse(readFileSync(join(root, "tests", "data", "units.json"), "utf8"));
const bundled = await build({
  entryPoints: [join(root, "editors", "vscode", "src", "stepview", "format.ts")],
  bundle: true,
  write: false,
  format: "esm",
  platform: "neutral",
  logLevel: "error",
});
const format = await import(`data:text/javascript;base64,${Buffer.from(bundled.outputFiles[0].text).toString("base64")}`);

let passed = 0, failed = 0;
function check(unit, value, got, want) {
  if (got === want) return passed++;
  failed++;
  console.log(`FAIL ${unit} ${value}: "${got}", the server writes "${want}"`);
}
for (const [ns, text] of table.milliseconds) {
  check("ms", ns, format.formatMilliseconds(ns), text);
  check("ms", ns, format.ms(ns), `${text} ms`);
}
for (const [n, text] of table.bytes) check("bytes", n, format.formatBytes(n), text);
for (const [x, text] of table.share) check("share", x, format.formatShare(x), text);
console.log(failed === 0 ? `units: all ${passed} figures as the server writes them` : `units: ${failed} of ${passed + failed} differ`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
