// The rule table and rule configuration lookups.
#include "analysis/features/rules.h"

namespace sightline::features {

const std::vector<RuleInfo>& allRules() {
  static const std::vector<RuleInfo> rules = {
      {"dataloader-pin-memory", Severity::Warning,
       "DataLoader without pin_memory=True in a file that copies batches to the GPU",
       "Batches in pageable memory are copied through a staging buffer, synchronously: the copy cannot overlap compute "
       "and `non_blocking=True` has no effect.",
       "Pass `pin_memory=True` so batches are loaded into page-locked memory, then copy them with "
       "`non_blocking=True`."},
      {"dataloader-num-workers", Severity::Warning,
       "DataLoader loading batches in the training process (no num_workers, or 0)",
       "With no worker processes, every batch is loaded and collated in the training process between steps, while the "
       "GPU waits.",
       "Set `num_workers` (a few per GPU, e.g. `min(8, os.cpu_count())`) and keep `persistent_workers=True` for short "
       "epochs."},
      {"missing-non-blocking", Severity::Warning, "batch copied to the GPU inside a loop without non_blocking=True",
       "A blocking copy makes the host wait for the transfer before it can queue the next kernels.",
       "Add `non_blocking=True` (with a pinned source, e.g. `DataLoader(pin_memory=True)`), so the copy is queued and "
       "overlaps."},
      {"sync-in-loop", Severity::Warning,
       "host-device synchronization (.item(), .cpu(), printing a tensor, ...) inside a training loop",
       "Reading a GPU value on the host waits for all queued work to finish: the GPU runs dry every step while the "
       "host catches up.",
       "Keep values on the GPU (accumulate into a tensor) and read them every N steps or once at the end."},
      {"cuda-synchronize-in-loop", Severity::Warning, "torch.cuda.synchronize() inside a training loop",
       "`torch.cuda.synchronize()` blocks the host until the GPU is idle, every step: no work is queued ahead.",
       "Remove it from the step; for timing use CUDA events or a profiler."},
      {"zero-grad-set-to-none", Severity::Warning, "zero_grad(set_to_none=False) writes zeros into every gradient",
       "Writing zeros into every gradient is a memset kernel per parameter each step.",
       "Use `zero_grad()` (set_to_none is the default): gradients are freed and re-created by backward."},
      {"cpu-tensor-then-copy", Severity::Warning,
       "tensor created on the CPU and copied to the GPU in the same expression",
       "The tensor is built on the CPU, then copied to the GPU: an extra allocation and a host-to-device copy each "
       "time.",
       "Create it on the GPU directly: pass `device=` to the factory."},
      // Raised by the server when a rule runs past its budget (diagnostics.h).
      {"rules-stopped", Severity::Information,
       "a rule ran past its time budget on a huge file in the editor; its findings below are missing",
       "The server checks a file on every edit; on a very large file a rule that would hold it for seconds is "
       "stopped so hovers and hints stay quick.",
       "Run `sightline check FILE` for the full findings, or raise the `ruleBudgetMs` setting."},
      // Raised only with a profile (profile_diagnostics.h).
      {"memory-growth", Severity::Warning, "GPU memory kept step after step by a line (needs a memory snapshot)",
       "Allocations a line makes every step that are never freed add up until the GPU runs out of memory; a list "
       "that keeps each step's loss or logits also keeps what they hold.",
       "Keep numbers (`.item()`) or detached tensors (`.detach()`) across steps, not the tensors themselves."},
      {"out-of-memory", Severity::Error, "the GPU ran out of memory on this line (needs a memory snapshot)",
       "The caching allocator could neither find nor reserve a block of the size the line asked for, so the run "
       "stopped there; what was alive at that moment decides whether it fits.",
       "Reduce what the lines named in the message hold at the peak (no_grad or inference_mode for evaluation, "
       "smaller batches or chunks, activation checkpointing, freeing references between steps), or ask for less "
       "on this line."},
      {"pageable-memcpy", Severity::Warning, "copies between the GPU and pageable host memory (needs a profile)",
       "Copies from or to pageable memory are staged through a pinned buffer and synchronous with the host.",
       "Load batches into pinned memory (`DataLoader(pin_memory=True)`) and copy with `non_blocking=True`."},
      {"sync-memcpy", Severity::Warning, "synchronous memcpy calls that block the host (needs a profile)",
       "A synchronous `cudaMemcpy` returns only when the data has arrived: the host queues nothing meanwhile and the "
       "copy cannot overlap compute.",
       "Copy from pinned memory with `non_blocking=True` (PyTorch then issues `cudaMemcpyAsync`)."},
      {"profile-source-mismatch", Severity::Warning,
       "the file differs from the source the loaded profile measured (needs a profile)",
       "Line costs are placed by line number: on a file that changed since it was profiled they land on the wrong "
       "lines.",
       "Profile the current version again, or open the version that was profiled."},
      {"regressed-since-baseline", Severity::Warning,
       "a line slower than in the compareWith run, past the runs' spread (needs a profile and compareWith)",
       "The per-step GPU time of the line (or its synchronizing calls, while the step grew) changed by more than the "
       "spread of the two runs' steps: a 95% bootstrap interval of the change of the median holds no change.",
       "Look at what changed on the line since the baseline; `sightline diff BASE NEW` gives the whole comparison."},
      {"gpu-idle", Severity::Warning, "GPU idle gaps while the host runs a line (needs a profile)",
       "While the GPU has no work queued it does nothing; gaps of a millisecond or more each step add straight to the "
       "step time.",
       "Keep the GPU fed: load data in DataLoader workers, move logging and host-side work out of the step, avoid "
       "syncs that drain the queue before host work."},
      {"step-verdict", Severity::Information,
       "what bounds the steady training step, and what to change (needs a profile)",
       "A step is as long as its slowest part: the GPU's work, or the host's launching, syncing, data loading and "
       "other work while the GPU waits. Speeding up kernels helps only a GPU-bound step.",
       "Apply the changes the message lists first; each names the time at stake per step."},
      {"fp32-matmul", Severity::Warning, "fp32 matrix multiplies on CUDA cores (needs a profile)",
       "On Ampere and newer GPUs, fp32 matmuls without TF32 run on CUDA cores at a fraction of the tensor cores' "
       "speed.",
       "Call `torch.set_float32_matmul_precision(\"high\")` once at start-up (TF32), or train under "
       "`torch.autocast(\"cuda\", dtype=torch.bfloat16)`."},
      {"sync-api", Severity::Warning, "host time blocked in CUDA synchronize calls (needs a profile)",
       "While the host waits in a synchronize call it queues no work: the GPU drains and then idles while the host "
       "catches up.",
       "Synchronize once outside the step (or not at all); read values lazily."},
      {"launch-bound", Severity::Warning, "many tiny kernels per step from one line (needs a profile)",
       "Each tiny kernel costs a launch on the host; when kernels are shorter than the launch, the host, not the GPU, "
       "sets the pace.",
       "Fuse them with `torch.compile`, or capture the step in a CUDA graph."},
      {"rank-imbalance", Severity::Warning, "one rank spends far longer on a line than the others (needs a profile)",
       "Ranks meet at every collective: the slowest one sets the step time, and the others wait for it.",
       "Give every rank the same work on the line (equal shards, equal sequence lengths, no rank-only work)."},
      {"exposed-communication", Severity::Warning,
       "NCCL communication with no compute beside it on its GPU (needs a profile)",
       "While a collective runs alone the GPU computes nothing: exposed communication adds straight to the step.",
       "Communicate less often (`no_sync()` in accumulation micro-steps), in larger buckets, and overlap it with "
       "compute; balance the ranks so none waits."},
      {"graph-break", Severity::Warning,
       "torch.compile breaks the compiled function's graph on a line (needs a profile and TORCH_TRACE)",
       "At a graph break Dynamo ends the graph, runs the line in Python and starts another: kernels cannot fuse across "
       "it, and what it reads (a `.item()`) can become a guard that recompiles the next graph for every new value.",
       "Follow Dynamo's hint in the message (for `.item()`: keep the value a tensor, or set "
       "`torch._dynamo.config.capture_scalar_outputs = True`)."},
      {"recompiles", Severity::Warning,
       "torch.compile recompiled a function during the run (needs a profile and TORCH_TRACE)",
       "Every recompile stops the step while Dynamo and Inductor compile again; past the recompile limit the function "
       "runs uncompiled.",
       "Remove the guard that keeps failing: mark changing dimensions dynamic, keep shapes fixed, keep values read "
       "from tensors as tensors."},
  };
  return rules;
}

const RuleInfo* findRule(std::string_view code) {
  for (const auto& r : allRules())
    if (r.code == code) return &r;
  return nullptr;
}

std::optional<Severity> parseSeverity(std::string_view name) {
  if (name == "error") return Severity::Error;
  if (name == "warning") return Severity::Warning;
  if (name == "information" || name == "info") return Severity::Information;
  if (name == "hint") return Severity::Hint;
  return std::nullopt;
}

std::string_view severityName(Severity severity) {
  switch (severity) {
    case Severity::Error:
      return "error";
    case Severity::Warning:
      return "warning";
    case Severity::Information:
      return "information";
    case Severity::Hint:
      return "hint";
  }
  return "warning";
}

bool RuleConfig::enabled(std::string_view code) const {
  auto it = rules.find(code);
  return it == rules.end() || it->second.enabled;
}

Severity RuleConfig::severityOf(std::string_view code) const {
  auto it = rules.find(code);
  if (it != rules.end() && it->second.severity) return *it->second.severity;
  const RuleInfo* rule = findRule(code);
  return rule ? rule->default_severity : Severity::Warning;
}

}  // namespace sightline::features
