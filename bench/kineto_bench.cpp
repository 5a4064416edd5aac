// Load + attribution of a PyTorch profiler trace, against `python3 -c 'json.load(...)'` of the
// same file in the same run (the floor users know: HTA's parser is slower than that), with
// throughput and peak RSS of each. Prints figures; asserts nothing.
//   kineto_bench TRACE.json[.gz] [SCRIPT.py ...]   (scripts give call sites, matched by file name)
// KINETO_BENCH_SAX=1 also times nlohmann's SAX parser on the file; built where Debian's
// libsimdjson-dev is installed, KINETO_BENCH_SIMDJSON=1 times simdjson's on-demand parser visiting
// the fields our reader reads (the other candidate); KINETO_BENCH_NO_PYTHON=1 skips the
// python3 run.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "analysis/attribution/attribution.h"
#include "analysis/attribution/call_sites.h"
#include "analysis/ingest/kineto_reader.h"
#include "analysis/source/source_index.h"
#include "bench/python_run.h"
#include "server/platform/allocator.h"

#ifdef SIGHTLINE_HAVE_SIMDJSON
#include <simdjson.h>
#endif

namespace {

using sightline::bench::seconds;

// nlohmann's SAX parser over the same bytes, doing nothing with them: the alternative to our
// scanner (the candidates were nlohmann SAX and simdjson on-demand; simdjson needs the
// whole document in memory, which the RSS target rules out for a streamed gzip file).
struct NullSax : nlohmann::json_sax<nlohmann::json> {
  size_t values = 0;
  bool null() override { return ++values, true; }
  bool boolean(bool) override { return ++values, true; }
  bool number_integer(number_integer_t) override { return ++values, true; }
  bool number_unsigned(number_unsigned_t) override { return ++values, true; }
  bool number_float(number_float_t, const string_t&) override { return ++values, true; }
  bool string(string_t&) override { return ++values, true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
};

#ifdef SIGHTLINE_HAVE_SIMDJSON
// simdjson's on-demand parser over the whole file (it needs it in memory, padded), visiting each
// event's fields our reader reads: the load and the visit, in seconds; {-1, -1} on an error.
std::pair<double, double> simdjsonVisit(const std::string& path, size_t& events) {
  auto t0 = std::chrono::steady_clock::now();
  simdjson::padded_string json;
  if (simdjson::padded_string::load(path).get(json)) return {-1, -1};
  auto t1 = std::chrono::steady_clock::now();
  simdjson::ondemand::parser parser(json.size() + 64);
  simdjson::ondemand::document doc;
  if (parser.iterate(json).get(doc)) return {-1, -1};
  int64_t sink = 0;
  simdjson::ondemand::object top;
  if (doc.get_object().get(top)) return {-1, -1};
  for (auto field : top) {
    std::string_view key;
    if (field.unescaped_key().get(key) || key != "traceEvents") continue;
    simdjson::ondemand::array list;
    if (field.value().get_array().get(list)) return {-1, -1};
    for (auto ev : list) {
      simdjson::ondemand::object event;
      if (ev.get_object().get(event)) return {-1, -1};
      ++events;
      for (auto f : event) {
        std::string_view k, text;
        double number = 0;
        if (f.unescaped_key().get(k)) return {-1, -1};
        if (k == "ts" || k == "dur" || k == "pid" || k == "tid") {
          if (!f.value().get_double().get(number)) sink += static_cast<int64_t>(number);
        } else if (k == "name" || k == "cat" || k == "ph") {
          if (!f.value().get_string().get(text)) sink += static_cast<int64_t>(text.size());
        } else if (k == "args") {
          simdjson::ondemand::object args;
          if (f.value().get_object().get(args)) continue;
          for (auto a : args) {
            std::string_view ak;
            int64_t v = 0;
            if (!a.unescaped_key().get(ak) && (ak == "External id" || ak == "correlation" || ak == "stream") &&
                !a.value().get_int64().get(v))
              sink += v;
          }
        }
      }
    }
  }
  auto t2 = std::chrono::steady_clock::now();
  if (sink == 42) std::printf(" ");  // keeps the visit from being optimized away
  return {seconds(t0, t1), seconds(t1, t2)};
}
#endif

// Runs python3's json.load on the file; returns {seconds, peak RSS in MiB} or {-1, 0}.
std::pair<double, double> pythonJsonLoad(const std::string& path) {
  return sightline::bench::runPython(
      "import json,gzip,sys; p=sys.argv[1]; o=gzip.open if p.endswith('.gz') else open; "
      "d=json.load(o(p,'rb')); print(len(d['traceEvents']))",
      path);
}

}  // namespace

int main(int argc, char** argv) {
  sightline::server::tuneAllocator(argv);  // as the sightline binary does
  using namespace sightline;
  if (argc < 2) {
    std::fprintf(stderr, "usage: kineto_bench TRACE.json[.gz] [SCRIPT.py ...]\n");
    return 2;
  }
  std::string path = argv[1];
  std::map<std::string, std::pair<std::unique_ptr<source::SourceFile>, attribution::CallSiteTable>> scripts;
  for (int i = 2; i < argc; ++i) {
    std::ifstream in(argv[i]);
    std::stringstream text;
    text << in.rdbuf();
    auto file = std::make_unique<source::SourceFile>(text.str());
    auto index = source::buildSourceIndex(*file);
    auto table = attribution::buildCallSites(*file, index);
    scripts[std::filesystem::path(argv[i]).filename().string()] = {std::move(file), std::move(table)};
  }
  auto file_bytes = std::filesystem::file_size(path);

  auto t0 = std::chrono::steady_clock::now();
  ingest::KinetoReadStats stats;
  auto loaded = ingest::loadKinetoTrace(path, &stats);
  auto t1 = std::chrono::steady_clock::now();
  if (!loaded.profile) {
    std::fprintf(stderr, "%s\n", loaded.error.c_str());
    return 1;
  }
  attribution::Options options;
  options.call_sites = [&](std::string_view p) -> const attribution::CallSiteTable* {
    auto it = scripts.find(std::filesystem::path(p).filename().string());
    return it == scripts.end() ? nullptr : &it->second.second;
  };
  auto attr = attribution::attribute(*loaded.profile, options);
  auto t2 = std::chrono::steady_clock::now();
  rusage self{};
  getrusage(RUSAGE_SELF, &self);
  double rss = static_cast<double>(self.ru_maxrss) / 1024.0;
  const auto& p = *loaded.profile;

  double load = seconds(t0, t1), total = seconds(t0, t2);
  double mb = static_cast<double>(stats.json_bytes) / 1e6;
  std::printf("trace          %s\n", path.c_str());
  std::printf("size           %.1f MB on disk, %.1f MB of JSON, %llu events\n", static_cast<double>(file_bytes) / 1e6,
              mb, static_cast<unsigned long long>(stats.events));
  std::printf("model          %zu GPU activities, %zu API calls, %zu ops/annotations, %zu Python calls\n",
              p.activities.size(), p.api_calls.size(), p.ranges.size(), p.calls.size());
  std::printf("load           %.2f s = %.0f MB/s of JSON\n", load, mb / load);
  std::printf("attribution    %.2f s\n", total - load);
  std::printf("load+attr      %.2f s = %.0f MB/s of JSON\n", total, mb / total);
  std::printf("peak RSS       %.0f MiB (%.2f of the file's JSON size)\n", rss, rss * 1.048576 / mb);
  std::printf("attributed     %.2f%% of %.1f ms GPU time (aligned %.2f%%, function %.2f%%), %d steps\n",
              100.0 * static_cast<double>(attr.attributed_gpu_ns) /
                  static_cast<double>(std::max<int64_t>(1, attr.steady_gpu_ns)),
              static_cast<double>(attr.steady_gpu_ns) / 1e6,
              100.0 * static_cast<double>(attr.by_method[static_cast<size_t>(attribution::Method::Aligned)]) /
                  static_cast<double>(std::max<int64_t>(1, attr.steady_gpu_ns)),
              100.0 * static_cast<double>(attr.by_method[static_cast<size_t>(attribution::Method::Function)]) /
                  static_cast<double>(std::max<int64_t>(1, attr.steady_gpu_ns)),
              attr.steps);
  std::fflush(stdout);
  if (std::getenv("KINETO_BENCH_SAX") && !path.ends_with(".gz")) {
    std::ifstream in(path, std::ios::binary);
    NullSax sax;
    auto s0 = std::chrono::steady_clock::now();
    bool parsed = nlohmann::json::sax_parse(in, &sax);
    double sax_s = seconds(s0, std::chrono::steady_clock::now());
    std::printf("nlohmann SAX   %s, %.2f s = %.0f MB/s of JSON (parse only, nothing kept)\n", parsed ? "ok" : "failed",
                sax_s, mb / sax_s);
    std::fflush(stdout);
  }
#ifdef SIGHTLINE_HAVE_SIMDJSON
  if (std::getenv("KINETO_BENCH_SIMDJSON") && !path.ends_with(".gz")) {
    size_t events = 0;
    auto [load_s, visit_s] = simdjsonVisit(path, events);
    if (load_s < 0)
      std::printf("simdjson       failed to parse the file\n");
    else
      std::printf(
          "simdjson       on-demand, one core: load %.2f s + visit %.2f s = %.0f MB/s, %zu events "
          "(our load, which builds the model too, is %.2fx its speed)\n",
          load_s, visit_s, mb / (load_s + visit_s), events, (load_s + visit_s) / load);
    std::fflush(stdout);
  }
#endif
  if (std::getenv("KINETO_BENCH_NO_PYTHON")) return 0;
  auto [py_s, py_rss] = pythonJsonLoad(path);
  if (py_s < 0)
    std::printf("python3        json.load failed or python3 is missing\n");
  else
    std::printf("python3        json.load %.2f s = %.0f MB/s, peak RSS %.0f MiB (we are %.1fx faster)\n", py_s,
                mb / py_s, py_rss, py_s / total);
  return 0;
}
