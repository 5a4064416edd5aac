// The bundle's entry: `SightlineStepView.render(root, data, host)` for the VS Code webview, and
// on a page that holds its data (`<script type="application/json" id="sightline-data">`, the
// HTML report) it draws itself.
import { StepViewData } from "./data";
import { render, reportHost } from "./render";

export { render, reportHost };

function start(): void {
  const holder = document.getElementById("sightline-data");
  const root = document.getElementById("sightline-root");
  if (!holder || !root) return;
  const data = JSON.parse(holder.textContent ?? "null") as StepViewData;
  const t0 = performance.now();
  render(root, data, reportHost());
  document.body.dataset.renderMs = String(Math.round(performance.now() - t0));
  document.body.dataset.rendered = "true";
}

if (typeof document !== "undefined") {
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
}
