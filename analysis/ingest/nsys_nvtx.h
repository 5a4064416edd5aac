// One pass over an nsys export's NVTX events (internal to analysis/ingest: nsys_reader): ranges,
// Python marks with their frames, ranks from NCCL's payloads, the capture's events; and what
// every pass reads and none changes (NvtxContext).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/ingest/nsys_reader.h"
#include "analysis/ingest/nsys_rows.h"
#include "analysis/ingest/sqlite.h"
#include "analysis/model/profile.h"

namespace sightline::ingest::nsys {

inline constexpr const char* kBacktraceDomain = "Python Backtrace on CUDA";
inline constexpr const char* kSamplingDomain = "Python Periodic Sampling";

// An unsigned little-endian field of `size` bytes at `offset` of a payload.
uint64_t readUnsigned(std::string_view blob, size_t offset, uint32_t size);

struct RankFields {
  int64_t rank_offset = -1, size_offset = -1;
  uint32_t rank_size = 4, size_size = 4;
};

// An NVTX domain, by (pid, id) of its eventType 75 row.
struct NvtxDomain {
  model::StringId name = 0;
  enum { Other, Backtrace, Sampling } python = Other;
};

// What every pass over NVTX events reads and none changes: read before the passes.
struct NvtxContext {
  std::map<std::pair<int64_t, int64_t>, NvtxDomain> domains;      // (pid, id) -> domain; pid -1: rows of no thread
  std::map<std::string, std::vector<PayloadLayout>> layouts;      // Python payload layouts by domain name
  std::map<std::pair<int64_t, int64_t>, RankFields> rank_fields;  // (domain, schema) -> where
  std::vector<std::pair<uint64_t, int64_t>> call_starts;          // kept API calls' (thread, start), sorted
};

// One pass over NVTX events (a range of rowids) into `out`: ranges, Python marks with their
// frames, the capture's events. Two passes run at once on two connections, each into its own
// profile; the second's is merged into the first's afterwards, so ids it interns are its own.
class NvtxPass : Reader {
 public:
  NvtxPass(Database& db, model::Profile& out, const NvtxContext& context,
           const std::unordered_map<int64_t, model::StringId>& string_ids)
      : Reader(db, out.info.warnings, string_ids), p_(out), c_(context) {}

  void run(const std::string& sql, const std::string& missing);

  size_t marks_without_blob = 0, undecodable = 0, python_marks = 0;
  bool autograd = false;
  std::map<uint32_t, std::pair<int32_t, int32_t>> ranks;  // pid -> (rank, world size)

 private:
  void row(Statement& s);

  void mark(Statement& s, int64_t g, const NvtxDomain& domain);

  bool enclosesCall(const model::NvtxRange& r) const;
  // Decodes a mark of process `pid` with the layout that fits that process's marks: the first
  // whose frames all name strings of the export (one layout in a report of identical processes).
  bool decodeMark(std::string_view blob, const std::vector<PayloadLayout>& layouts, uint64_t process_key,
                  std::vector<RawFrame>& raw);

  // An NVTX payload whose schema has a "Rank" field (NCCL's communicator init): the process's
  // rank. Header: four u64 { version, schema id, payload size, payload offset }.
  void readRankPayload(std::string_view blob, int64_t domain, uint32_t pid);

  // Stacks repeat (the same loop, the same layers): each distinct one is stored once.
  std::pair<uint32_t, uint32_t> internStack(const std::vector<RawFrame>& raw);

  // Function and file names arrive XML-escaped (`&lt;module&gt;`, `&lt;string&gt;`).
  model::StringId functionName(uint64_t id);

  model::StringId stringFor(uint64_t id);

  model::Profile& p_;
  const NvtxContext& c_;
  int64_t domain_pid_ = -2, domain_id_ = 0;  // the last row's (no row's at first)
  NvtxDomain domain_;
  std::vector<RawFrame> raw_;
  std::vector<RawFrame> raw_frames_;  // parallel to p_.frames: the ids they were decoded from
  std::unordered_multimap<uint64_t, std::pair<uint32_t, uint32_t>> stacks_;  // hash -> (first, count)
  std::unordered_map<uint64_t, size_t> layout_of_process_;                   // (pid, sampling?) -> index of its layout
};

}  // namespace sightline::ingest::nsys
