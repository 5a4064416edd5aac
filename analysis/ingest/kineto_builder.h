// Trace events -> the profile model (internal to analysis/ingest): activities joined to their
// launches, API calls, autograd op and annotation ranges, Python calls with their parents,
// `Call stack` marks; then the finishing passes (sorting, nesting clamps). Two builders of one
// file's halves merge with absorb().
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/ingest/kineto_events.h"
#include "analysis/model/profile.h"

namespace sightline::ingest::kineto {

struct PendingCall {
  model::PythonCall call;
  int64_t id = -1;
  int64_t parent_id = -1;
};

class Builder {
 public:
  explicit Builder(model::Profile& p);

  void add(const RawEvent& e);

  // Sorts, links Python parents, gives GPU activities the pid of their launch.
  void finish();
  // Sorts this builder's own rows, on the thread that read them: a split trace's halves each
  // sort their own, and finish() merges the two runs.
  void presort();

  size_t pythonEvents() const { return pending_.size() + p_.calls.size(); }

  // Room for the rows `json_bytes` of trace events usually hold (a trace with Python stacks:
  // a Python call per ~700 bytes, an op range per ~800), taken before they arrive: tables
  // grown by doubling take fresh pages for every doubling, and fresh pages are what a large
  // load spends most on in a VM. Capacity never used is address space, not memory.
  void expect(uint64_t json_bytes);

  // Takes the rows another builder read (the second part of a split trace) into this one,
  // re-interning its strings. Before finish().
  void absorb(Builder& other, model::Profile& part);
  bool sawCallStacks() const { return saw_call_stacks_; }

 private:
  uint32_t launchConfig(const std::array<uint32_t, 3>& grid, const std::array<uint32_t, 3>& block);

  void describePython(std::string_view name, model::PythonCall& call);

  // "a.py(12): f;b.py(3): g;" innermost first -> one mark at the op's start.
  void addCallStack(std::string_view stack, int64_t time, uint32_t pid, uint32_t tid);

  // Float timestamps can end a child a few ns after its parent: clamp children into parents
  // (within 2 ns) so nesting by time holds, as HTA does.
  void clampNesting();

  model::Profile& p_;
  model::StringId memset_name_ = 0;
  std::array<model::StringId, 6> copy_names_{};
  std::unordered_map<uint64_t, uint32_t> configs_;
  std::unordered_map<model::StringId, model::PythonCall> python_names_;
  std::vector<PendingCall> pending_;
  bool saw_call_stacks_ = false;
  bool presorted_ = false;
  // Where absorb() appended a presorted part's rows: the runs finish() merges.
  struct Runs {
    model::Profile::RowRuns rows;
    size_t ranges = 0, pending = 0, memory_uses = 0;
  };
  std::optional<Runs> runs_;
};

}  // namespace sightline::ingest::kineto
