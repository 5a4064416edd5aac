// The capture-overhead model (analysis/attribution/capture_overhead.h) checked against runs of
// the same scripts without a profiler: for each capture, the step the replay estimates next to
// the step the script's own log measured. Prints figures; asserts nothing.
//   capture_overhead_bench [--fit] [--loo] GROUP:PROFILE:MEASURED_MS...
// GROUP names the script and size a capture belongs to: --fit fits the per-event costs on every
// group (each weighted alike, relative error squared); --loo fits without each group in turn and
// shows that group with the costs it was not fitted on. docs/capture-overhead.md has the figures.
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "analysis/attribution/attribution.h"
#include "analysis/attribution/capture_overhead.h"
#include "analysis/ingest/profile_loader.h"

namespace {

using sightline::attribution::CaptureCosts;

struct Capture {
  std::string group, path;
  double measured_ms = 0;
  sightline::model::Profile profile;
};

double estimateMs(const Capture& c, const CaptureCosts& costs) {
  sightline::attribution::Options options;
  options.capture_costs = costs;
  auto a = sightline::attribution::attribute(c.profile, options);
  return a.step_summary.unprofiled.estimated ? a.step_summary.unprofiled.wall_ns / 1e6 : NAN;
}

double score(const std::vector<Capture>& all, const CaptureCosts& costs, const std::string& leave_out) {
  std::map<std::string, std::pair<double, int>> by_group;
  for (const auto& c : all) {
    if (c.group == leave_out) continue;
    double e = estimateMs(c, costs);
    double err = std::isnan(e) ? 1 : (e - c.measured_ms) / c.measured_ms;
    auto& g = by_group[c.group];
    g.first += err * err, ++g.second;
  }
  double s = 0;
  for (const auto& [g, v] : by_group) s += v.first / v.second;
  return s;
}

// Coordinate descent from the measured costs, halving the steps each round.
CaptureCosts fit(const std::vector<Capture>& all, const std::string& leave_out) {
  CaptureCosts c = sightline::attribution::measuredCaptureCosts();
  CaptureCosts step{};
  for (size_t k = 0; k < c.size(); ++k) step[k] = std::max(500.0, c[k] / 3);
  double best = score(all, c, leave_out);
  for (int round = 0; round < 4; ++round) {
    for (size_t k = 0; k < c.size(); ++k)
      for (double sign : {1.0, -1.0}) {
        CaptureCosts t = c;
        t[k] = std::max(0.0, t[k] + sign * step[k]);
        double s = score(all, t, leave_out);
        if (s < best) best = s, c = t;
      }
    for (auto& s : step) s /= 2;
  }
  return c;
}

void printCosts(const CaptureCosts& c) {
  for (size_t k = 0; k < c.size(); ++k)
    std::printf("  %-18s %8.0f ns\n",
                sightline::model::captureEventName(static_cast<sightline::model::CaptureEvent>(k)), c[k]);
}

void printRow(const Capture& c, const CaptureCosts& costs) {
  double e = estimateMs(c, costs);
  sightline::attribution::Options plain;
  plain.estimate_unprofiled = false;
  auto a = sightline::attribution::attribute(c.profile, plain);
  std::printf("%-16s %-34s captured %7.2f  estimate %7.2f  measured %7.2f  error %+4.0f%%\n", c.group.c_str(),
              c.path.substr(c.path.find_last_of('/') + 1).c_str(), a.step_summary.wall_ns / 1e6, e, c.measured_ms,
              100 * (e - c.measured_ms) / c.measured_ms);
}

}  // namespace

int main(int argc, char** argv) {
  bool do_fit = false, loo = false;
  std::vector<Capture> all;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--fit") {
      do_fit = true;
      continue;
    }
    if (a == "--loo") {
      loo = true;
      continue;
    }
    auto c1 = a.find(':'), c2 = a.rfind(':');
    if (c1 == std::string::npos || c1 == c2) {
      std::fprintf(stderr, "usage: capture_overhead_bench [--fit] [--loo] GROUP:PROFILE:MEASURED_MS...\n");
      return 2;
    }
    Capture c{a.substr(0, c1), a.substr(c1 + 1, c2 - c1 - 1), std::stod(a.substr(c2 + 1)), {}};
    auto loaded = sightline::ingest::loadProfile(c.path);
    if (!loaded.profile) {
      std::fprintf(stderr, "%s: %s\n", c.path.c_str(), loaded.error.c_str());
      return 2;
    }
    c.profile = std::move(*loaded.profile);
    all.push_back(std::move(c));
  }
  CaptureCosts costs = sightline::attribution::measuredCaptureCosts();
  if (do_fit) {
    costs = fit(all, "");
    std::printf("fitted on every group:\n");
    printCosts(costs);
  }
  std::printf("with %s costs:\n", do_fit ? "the fitted" : "the measured");
  for (const auto& c : all) printRow(c, costs);
  if (loo) {
    std::map<std::string, bool> groups;
    for (const auto& c : all) groups[c.group] = true;
    std::printf("each group with costs fitted without it:\n");
    for (const auto& [g, unused] : groups) {
      CaptureCosts without = fit(all, g);
      for (const auto& c : all)
        if (c.group == g) printRow(c, without);
    }
  }
  return 0;
}
