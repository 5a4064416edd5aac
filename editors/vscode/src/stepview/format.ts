// Numbers for people, by the server's rules (analysis/features/units.h): one formatter per
// unit, checked against the same table (tests/data/units.json) by editors/vscode/test/units.mjs.
// toFixed rounds an exact tie away from zero, as the server's formatFixed does.

// Milliseconds, three significant figures (two decimals below 10), without the unit.
export function formatMilliseconds(ns: number): string {
  const v = ns / 1e6;
  const a = Math.abs(v);
  return v.toFixed(a >= 100 ? 0 : a >= 10 ? 1 : 2);
}

// formatMilliseconds with its unit: "0.50 ms".
export function ms(ns: number): string {
  return `${formatMilliseconds(ns)} ms`;
}

// "24.56 GiB", "812.0 MiB", "4.0 KiB", "12 B".
export function formatBytes(n: number): string {
  const v = Math.abs(n);
  const sign = n < 0 ? "-" : "";
  if (v >= 1024 ** 3) return `${sign}${(v / 1024 ** 3).toFixed(2)} GiB`;
  if (v >= 1024 ** 2) return `${sign}${(v / 1024 ** 2).toFixed(1)} MiB`;
  if (v >= 1024) return `${sign}${(v / 1024).toFixed(1)} KiB`;
  return `${sign}${v.toFixed(0)} B`;
}

export function basename(path: string): string {
  return path.split(/[\\/]/).pop() ?? path;
}

// "81%" from 0.81; one decimal below 9.5% ("0.6%").
export function formatShare(x: number): string {
  return `${(x * 100).toFixed(x >= 0.095 ? 0 : 1)}%`;
}

// A line's work by kind, as the text report prints it: "convolution 80% (20 kernels), ...".
export function kindsText(kinds: { kind: string; count: number; share: number }[], most = 4): string {
  const noun = (kind: string, n: number) =>
    kind === "copy" ? (n === 1 ? "copy" : "copies") : kind === "fill" ? (n === 1 ? "fill" : "fills") : n === 1 ? "kernel" : "kernels";
  const parts = kinds.slice(0, most).map((k) => `${k.kind} ${formatShare(k.share)} (${k.count} ${noun(k.kind, k.count)})`);
  if (kinds.length > most) parts.push(`${kinds.length - most} more ${kinds.length - most === 1 ? "kind" : "kinds"}`);
  return parts.join(", ");
}
