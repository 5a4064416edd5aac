// The step view's data as the server sends it (server/render/step_view_json.cpp,
// docs/lsp-extensions.md `sightline/stepView`). Every mark names a line by index into `lines`.
export interface ViewLine {
  path: string;
  line: number;
  selfNs: number;
  forwardNs: number;
  backwardNs: number;
  inclusiveNs: number;
  inclusiveForwardNs: number;
  inclusiveBackwardNs: number;
  idleNs: number;
  memoryPeakBytes: number;
  share: number; // of the steady steps' GPU time, the server's figure (the report's margin and hints show it)
  inclusiveShare: number;
  inclusiveShown?: boolean; // the server tells its inclusive time (the margin's and the hints' rule)
  oneoffNs?: number; // one-off GPU time beneath it (outside the steady steps; a total, never per step)
  oneoffMarked?: boolean; // the server marks it (1 ms and a twentieth of all one-off time), as the report does
  kinds?: WorkKind[]; // its own GPU work by kind (two kinds or more), most first; totals
}

export interface WorkKind {
  kind: string; // "convolution", "GEMM", "batch norm", ... (analysis/features/kernel_kinds.h)
  ns: number;
  count: number;
  share: number; // of the line's GPU work
}

export type Cause = "launch" | "sync" | "input" | "host" | "compile";
export const CAUSES: Cause[] = ["launch", "sync", "input", "host", "compile"];

export interface StepBar {
  index: number;
  kind: "steady" | "warm-up" | "outlier" | "lost";
  startNs: number;
  wallNs: number;
  computeNs: number;
  commNs: number;
  commWaitNs: number;
  copyNs: number;
  idleNs: Record<Cause, number>;
  topLine: number;
  captureNs: number; // host time the profiler itself cost the step
}

export interface RankBars {
  label: string;
  pid: number;
  straggler: boolean;
  medianWallNs: number;
  steps: StepBar[];
}

// [startNs, endNs, line, name index]
export type Span = [number, number, number, number];
// [startNs, endNs, cause, line]
export type Gap = [number, number, Cause, number];

export interface Lane {
  kind: "host" | "stream";
  name: string;
  merged: number;
  spans: Span[];
}

export interface Timeline {
  rank: string;
  step: number;
  originNs: number;
  wallNs: number;
  gpuStartNs: number;
  endNs: number;
  lanes: Lane[];
  gaps: Gap[];
  names: string[];
}

export interface MemoryPoint {
  t: number; // ns from the first sample
  allocated: number;
  reserved: number;
  bands?: number[]; // bytes alive of each of MemoryView.bands then (the rest: allocated less their sum)
}

export interface MemoryView {
  peakAllocatedBytes: number;
  peakReservedBytes: number;
  peakTimeNs: number;  // on the series' clock
  series: MemoryPoint[];
  bands?: number[]; // line indices drawn as bands, most at the peak first
  stepSeries?: MemoryPoint[]; // the peak's step, sampled finer (empty: the series holds every event)
  steps: number[];  // step starts on the series' clock
  top: { line: number; bytes: number }[];
  // The allocation that ran out of memory (null: none): when, asked, free, its line and call
  // chain (line indices, outermost first; -1: a frame without a listed line).
  oom?: { timeNs: number; requestedBytes: number; freeBytes: number; line: number; chain: number[] } | null;
}

export interface Headline {
  capturedNs: number;
  unprofiled: {
    source: "measured" | "step-log" | "light-capture" | "model" | "none";
    wall_ns: number | null;
    range_ns: [number, number];
    bound: string | null;
    busy_share: number | null;
  };
  captured: string; // "Step 13.3 ms as captured"
  text: string; // the step without the profiler, as the report's `Unprofiled` line says it
  summary: string; // "without the profiler 12.4 ms (measured) · GPU 47% busy · sync-bound"
  measure: string; // how to measure it; "" where it was
}

export interface StepViewData {
  version: number;
  profile: { file: string; format: string; gpus: string[] };
  hasSteps: boolean;
  stepsSource: string;
  steadySteps: number;
  unprofiledWallNs: number;
  // The headline every surface gives: the step as captured and without the profiler (its
  // figure or range, where that comes from, the bound where it holds), and how to measure it.
  headline?: Headline | null;
  captureOverheadNs: number;
  lines: ViewLine[];
  ranks: RankBars[];
  timelines: Timeline[]; // one per rank (the first ranks and the straggler)
  topLines: number[];
  causeLines?: Partial<Record<Cause, number[]>>;
  memory?: MemoryView | null;
  // The report's header as the server's story rows (server/render/story_render.h): the machine,
  // the job, the verdict, Try, warnings, compiling, memory and its out-of-memory error. Each row's
  // text is given whole (`lines`) and in parts (places link to their lines); figures come
  // formatted, never computed here.
  story?: StoryRow[];
  // A job of several ranks (server/render/job_json.cpp jobPageJson): ranks × steps, the straggler.
  job?: JobPage | null;
  // The HTML report only: annotated source of the named files.
  sources?: { path: string; lines: { line: number; text: string; line_index: number }[] }[];
}

export interface StoryPart {
  kind: "text" | "code" | "figure" | "place";
  text: string;
  path?: string; // place
  line?: number; // place, 1-based
}

export interface StoryRow {
  label: string; // "" continues the row above
  role: "fact" | "cause" | "change" | "warning" | "note";
  qualifier?: string; // "as captured"
  title?: string;
  lines: string[];
  parts: StoryPart[][];
  table?: { columns: { name: string; left: boolean }[]; rows: string[][]; note: string };
}

export interface JobPage {
  ranks: string[]; // labels, in the job's order
  straggler: number; // index into ranks; -1 none
  stragglerSteps: number[]; // step indices where it held the others up
  stepsPerColumn: number; // steps binned into columns (the slowest step of each bin shown)
  wallNs: number[][]; // ranks × columns: step wall (-1: no such step)
  medianStepNs: number;
  lines: { path: string; line: number; medianNs: number; p95Ns: number; maxNs: number; maxRank: number }[];
}

// What the page asks of its host: open a line (VS Code: reveal it in an editor; the HTML
// report: scroll to its annotated listing).
export interface Host {
  openLine(path: string, line: number): void;
}
