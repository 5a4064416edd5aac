// Small DOM helpers. Text from a profile only ever goes in as text (textContent, attributes),
// never as markup.
const SVG_NS = "http://www.w3.org/2000/svg";

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number> = {},
  children: (Node | string)[] = [],
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  for (const c of children) e.append(typeof c === "string" ? document.createTextNode(c) : c);
  return e;
}

export function svg(tag: string, attrs: Record<string, string | number> = {}, children: Node[] = []): SVGElement {
  const e = document.createElementNS(SVG_NS, tag) as SVGElement;
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  for (const c of children) e.append(c);
  return e;
}

export function svgText(x: number, y: number, text: string, attrs: Record<string, string | number> = {}): SVGElement {
  const t = svg("text", { x, y, ...attrs });
  t.textContent = text;
  return t;
}

// One tooltip for the page: shown beside the pointer, text only.
export class Tooltip {
  private readonly node: HTMLDivElement;
  constructor(root: HTMLElement) {
    this.node = el("div", { class: "sl-tooltip", role: "tooltip" });
    this.node.style.display = "none";
    root.append(this.node);
  }
  show(lines: string[], x: number, y: number): void {
    this.node.replaceChildren(...lines.map((l, i) => el(i === 0 ? "strong" : "div", {}, [l])));
    this.node.style.display = "block";
    const w = this.node.offsetWidth;
    const left = x + 14 + w > window.innerWidth ? x - w - 10 : x + 14;
    this.node.style.left = `${Math.max(0, left) + window.scrollX}px`;
    this.node.style.top = `${y + 14 + window.scrollY}px`;
  }
  hide(): void {
    this.node.style.display = "none";
  }
}

// A colour per line index (a fixed palette, stable between renders); -1: no line.
const PALETTE = [
  "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948",
  "#ff9da7", "#9c755f", "#e15759", "#86bcb6", "#d37295", "#a0cbe8",
];
export function lineColour(line: number): string {
  return line < 0 ? "#9e9e9e" : PALETTE[line % PALETTE.length];
}
