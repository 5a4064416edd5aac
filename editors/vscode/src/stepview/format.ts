// Numbers for people, as the server's text shows them (server/profile_text.cpp).
export function ms(ns: number): string {
  const v = ns / 1e6;
  if (v === 0) return "0 ms";
  const a = Math.abs(v);
  const digits = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3;
  return `${v.toFixed(digits)} ms`;
}

export function bytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(2)} ${units[u]}`;
}

export function basename(path: string): string {
  return path.split(/[\\/]/).pop() ?? path;
}

export function percent(x: number): string {
  return `${Math.round(x * 1000) / 10}%`;
}

// A line's work by kind, as the text report prints it: "convolution 80% (20 kernels), ...".
export function kindsText(kinds: { kind: string; count: number; share: number }[], most = 4): string {
  const noun = (kind: string, n: number) =>
    kind === "copy" ? (n === 1 ? "copy" : "copies") : kind === "fill" ? (n === 1 ? "fill" : "fills") : n === 1 ? "kernel" : "kernels";
  // As the server's formatShare: whole percents, one decimal below 9.5%.
  const share = (x: number) => (x >= 0.095 ? `${(x * 100).toFixed(0)}%` : `${(x * 100).toFixed(1)}%`);
  const parts = kinds.slice(0, most).map((k) => `${k.kind} ${share(k.share)} (${k.count} ${noun(k.kind, k.count)})`);
  if (kinds.length > most) parts.push(`${kinds.length - most} more ${kinds.length - most === 1 ? "kind" : "kinds"}`);
  return parts.join(", ");
}
