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
