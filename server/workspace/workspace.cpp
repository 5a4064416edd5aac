// Workspace state: settings, profile loads and reloads, per-document caches.
#include "server/workspace/workspace.h"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

#include "analysis/attribution/nvtx_sites.h"
#include "analysis/features/profile_diagnostics.h"
#include "analysis/features/regression_findings.h"
#include "analysis/features/source_match.h"
#include "server/lsp/uri.h"
#include "server/platform/log.h"
#include "server/platform/worker_pool.h"
#include "server/workspace/local_files.h"
#include "server/workspace/profile_files.h"

namespace sightline::server {

namespace asio = boost::asio;
using nlohmann::json;

Workspace::Workspace(asio::io_context& io, WorkspaceClient& client, std::chrono::milliseconds profile_poll)
    : io_(io), client_(client), profile_poll_(profile_poll), loader_(io), compare_loader_(io), watch_timer_(io) {}

void Workspace::stop() {
  stopped_ = true;
  watch_timer_.cancel();
  loader_.cancel();
  compare_loader_.cancel();
}

void Workspace::setRoot(const std::string& path) { root_ = normalPath(path); }

bool Workspace::toggleHints() {
  settings_.hints_enabled = !settings_.hints_enabled;
  client_.hintsChanged();
  return settings_.hints_enabled;
}

Document& Workspace::open(const std::string& uri, int64_t version, std::string text) {
  findings_.erase(uri);  // a reopened document starts over (its generations restart at 0)
  costs_.erase(uri);
  Document& doc = documents_.open(uri, version, std::move(text));
  reloadForRanges(doc);
  return doc;
}

namespace {

// Whether a script's text may open NVTX ranges (attribution/nvtx_sites.h's calls name these).
bool mayOpenRanges(const std::string& text) {
  return text.find("nvtx") != std::string::npos || text.find("record_function") != std::string::npos;
}

}  // namespace

std::vector<join::SourceInput> Workspace::namedDocuments() {
  std::vector<join::SourceInput> out;
  for (Document* doc : documents_.all()) {
    auto path = uriToPath(doc->uri());
    if (!path || !mayOpenRanges(doc->file().text())) continue;
    auto file = std::make_shared<source::SourceFile>(doc->file().text(), false);
    auto index = std::make_shared<source::SourceIndex>(source::buildSourceIndex(*file));
    out.push_back({normalPath(*path), std::move(file), std::move(index)});
  }
  return out;
}

bool Workspace::namesRanges(const LoadedProfile& loaded, Document& doc) {
  auto path = uriToPath(doc.uri());
  if (!path || !mayOpenRanges(doc.file().text())) return false;
  if (std::find(loaded.named.begin(), loaded.named.end(), normalPath(*path)) != loaded.named.end()) return false;
  // Only ranges the profile recorded make a difference.
  const model::Profile& p = loaded.profile();
  std::set<std::string> recorded;
  for (const auto& r : p.ranges)
    if (r.op == 0) recorded.insert(p.strings[r.text]);
  for (const auto& site : attribution::findNvtxSites(doc.file(), doc.index(), 0))
    if (recorded.count(site.text)) return true;
  return false;
}

void Workspace::reloadForRanges(Document& doc) {
  if (!profile_ || loader_.busy() || !namesRanges(*profile_, doc)) return;
  auto path = uriToPath(doc.uri());
  loadProfiles(profile_->parts,
               std::filesystem::path(path.value_or("")).filename().string() + " opens its NVTX ranges");
}

bool Workspace::close(const std::string& uri) {
  findings_.erase(uri);
  costs_.erase(uri);
  return documents_.close(uri);
}

void Workspace::loadProfile(const std::string& path, const std::string& reason) { loadProfiles({path}, reason); }

void Workspace::reloadProfiles(const std::string& reason) {
  loadProfiles(profile_ ? profile_->parts : profileCandidates(), reason);
}

namespace {

std::string loadKey(const std::string& path) { return path + "|" + std::to_string(fileMtimeNs(path)); }

}  // namespace

bool Workspace::reloadIfNewer() {
  if (stopped_ || loader_.busy() || !loads_started_) return false;
  auto candidates = profileCandidates();
  // The newest as the last load found it (loaded, or failed: not read again until it changes).
  if (candidates.empty() || loadKey(candidates.front()) == last_load_key_) return false;
  loadProfiles(std::move(candidates), profile_ ? "a newer profile in the workspace" : "a profile in the workspace");
  return true;
}

void Workspace::cancelLoad(const std::string& progress_token) {
  if (progress_token_.empty() || progress_token != progress_token_) return;
  loader_.cancel();
  client_.endProgress(progress_token_, "cancelled");
  progress_token_.clear();
  SL_LOG(Info) << "profile load cancelled";
}

void Workspace::profileFileChanged(const std::string& path) {
  if (!profile_ || normalPath(path) != normalPath(profile_->path)) return;
  pending_mtime_ = 0;
  watchProfile();  // the poll confirms the file is stable before reloading
}

CompiledCodeSearch Workspace::compiledCodeSearch() const {
  CompiledCodeSearch search;
  for (const auto& folder : settings_.compiled_code) {
    std::filesystem::path p(folder);
    search.named.push_back(p.is_absolute() || root_.empty() ? folder : (std::filesystem::path(root_) / p).string());
  }
  if (!root_.empty()) search.roots.push_back(root_);
  search.may_open = [scope = scopeOf(workspaceMapper())](const std::string& folder) { return scope.allows(folder); };
  return search;
}

join::JoinOptions Workspace::joinOptions() const {
  join::JoinOptions options;
  options.idle_gap_ns = settings_.thresholds.gpu_idle_gap_ns;
  options.all_steps = settings_.all_steps;
  options.runner = &WorkerPool::shared();
  return options;
}

void Workspace::applySettings(const json& section) {
  std::vector<std::string> warnings;
  bool hints_before = settings_.hints_enabled;
  auto hint_options_before = settings_.hints;
  int64_t idle_gap_before = settings_.thresholds.gpu_idle_gap_ns;
  bool all_steps_before = settings_.all_steps;
  auto compiled_code_before = settings_.compiled_code;
  settings_ = parseSettings(section, warnings);
  if (settings_.thresholds.gpu_idle_gap_ns != idle_gap_before || settings_.all_steps != all_steps_before ||
      settings_.compiled_code != compiled_code_before) {
    // Gaps and steady steps are found while loading: load both profiles again.
    reload_profiles_ = true;
    compare_setting_.clear();
  }
  settings_received_ = settings_received_ || !section.is_null();
  ++settings_generation_;
  for (const auto& w : warnings) {
    SL_LOG(Warn) << "settings: " << w;
    client_.logMessage(2, "sightline settings: " + w);
  }
  client_.findingsChanged();
  if (hints_before != settings_.hints_enabled || hint_options_before.min_share != settings_.hints.min_share ||
      hint_options_before.per_step != settings_.hints.per_step ||
      hint_options_before.show_backward != settings_.hints.show_backward ||
      hint_options_before.figures != settings_.hints.figures)
    client_.hintsChanged();
  // Settings may arrive inside `initialize`: load once the response has gone out.
  asio::post(io_, [this] {
    if (!client_.serving() || stopped_) return;
    loadCompare();
    if (loads_started_ || loader_.busy() || !progress_token_.empty()) {
      if (settings_.profiles == loaded_setting_ && !reload_profiles_) return;
    }
    reload_profiles_ = false;
    loaded_setting_ = settings_.profiles;
    loadProfiles(profileCandidates(), settings_.profiles.empty() ? "the newest profile found in the workspace"
                                                                 : "from the sightline.profiles setting");
  });
}

std::vector<std::string> Workspace::profileCandidates() const {
  if (settings_.profiles.empty()) return discoverProfiles(root_);
  std::vector<std::string> out;
  for (const auto& entry : settings_.profiles)
    for (auto& f : expandProfileSetting(root_, entry)) out.push_back(std::move(f));
  return out;
}

void Workspace::loadCompare() {
  if (settings_.compare_with == compare_setting_) return;
  compare_setting_ = settings_.compare_with;
  compare_loader_.cancel();
  auto changed = [this] {
    ++profile_generation_;  // costs carry the compare profile's: recompute them
    costs_.clear();
    computeRegression();
    client_.hintsChanged();
    client_.findingsChanged();
  };
  if (compare_setting_.empty()) {
    if (compare_ || !compare_summary_path_.empty()) {
      compare_.reset();
      compare_summaries_.clear(), compare_summary_path_.clear();
      changed();
    }
    return;
  }
  auto files = expandProfileSetting(root_, compare_setting_);
  if (files.empty() || fileMtimeNs(files.front()) == 0) {
    std::string message = "sightline.compareWith: no such profile: " + compare_setting_;
    SL_LOG(Warn) << message;
    client_.logMessage(2, message);
    return;
  }
  compare_.reset();
  compare_summaries_.clear(), compare_summary_path_.clear();
  if (isSummaryFile(files.front())) {
    std::string error;
    auto summaries = readSummaryFile(files.front(), error);
    if (summaries && summaries->empty()) summaries.reset(), error = "holds no rank summary";
    if (!summaries) {
      std::string message = "sightline.compareWith: " + files.front() + ": " + error;
      SL_LOG(Warn) << message;
      client_.logMessage(2, message);
      return;
    }
    SL_LOG(Info) << "comparing with the rank summaries of " << files.front() << " (sightline.compareWith)";
    compare_summaries_ = std::move(*summaries);
    compare_summary_path_ = files.front();
    changed();
    if (profile_) client_.profileStatusChanged();
    return;
  }
  SL_LOG(Info) << "loading " << files.front() << " to compare with (sightline.compareWith)";
  compare_loader_.load(
      {files.front()}, localJoinEnvironment(workspaceMapper()), joinOptions(), [](std::string, int) {},
      [this, changed, name = files.front()](std::shared_ptr<LoadedProfile> loaded, std::string error) {
        if (!loaded) {
          bool json = name.ends_with(".json") && !name.ends_with(".trace.json");
          std::string message = "sightline.compareWith: " +
                                (json ? name +
                                            " is neither a rank summary (sightline report --format summary) nor a "
                                            "profile: " +
                                            error
                                      : error);
          SL_LOG(Warn) << message;
          client_.logMessage(2, message);
          return;
        }
        compare_ = std::move(loaded);
        changed();
        if (profile_) client_.profileStatusChanged();
      },
      compiledCodeSearch());
}

void Workspace::computeRegression() {
  regression_.reset();
  const std::vector<join::RankSummary>* base = compare_ ? &compare_->summaries : &compare_summaries_;
  if (!profile_ || base->empty() || profile_->summaries.empty()) return;
  std::string why, path = comparePath();
  regression_ =
      regressionOf(*base, profile_->summaries, workspaceMapper(), std::filesystem::path(path).filename().string(), why);
  if (!regression_ && !why.empty()) {
    // Where the user looks: the hints would otherwise just show no change, with no reason.
    std::string message = "sightline.compareWith: " + path + " cannot be compared with the profile: " + why;
    client_.logMessage(2, message);
    client_.showMessage(2, message);
  }
}

void Workspace::loadProfiles(std::vector<std::string> candidates, const std::string& reason) {
  ++profile_generation_;  // a load is under way: earlier settings no longer apply
  loads_started_ = true;
  if (candidates.empty()) {
    profile_error_ = settings_.profiles.empty()
                         ? "no profile found in the workspace (*.nsys-rep, *.sqlite, *.pt.trace.json[.gz]); "
                           "set sightline.profiles or run sightline.loadProfile"
                         : "no file matches the sightline.profiles setting";
    SL_LOG(Info) << profile_error_;
    client_.profileStatusChanged();
    return;
  }
  // The other ranks' reports of the same run load with it: those the setting's glob matched, or
  // in the workspace, `*rank<N>*` files beside it.
  // What reloadIfNewer compares: the newest candidate, not the run's first report (its ranks'
  // reports are in name order, and another rank's may be newer).
  last_load_key_ = loadKey(candidates.front());
  std::vector<std::string> paths = sameRun(candidates.front(), candidates, settings_.profiles.empty());
  std::string path = paths.front();
  candidates.erase(
      std::remove_if(candidates.begin(), candidates.end(),
                     [&](const std::string& c) { return std::find(paths.begin(), paths.end(), c) != paths.end(); }),
      candidates.end());
  std::string message =
      "Sightline: loading " + path +
      (paths.size() > 1 ? " and " + std::to_string(paths.size() - 1) + " more reports of its ranks" : "") + " (" +
      reason + ")";
  SL_LOG(Info) << message;
  client_.logMessage(3, message);
  std::string token = client_.beginProgress("Loading profile", std::filesystem::path(path).filename().string());
  progress_token_ = token;
  // Open documents first, then the workspace: where the profile's scripts are.
  attribution::PathMapper mapper = workspaceMapper();
  for (Document* doc : documents_.all())
    if (auto local = uriToPath(doc->uri())) mapper.candidates.push_back(normalPath(*local));
  join::JoinOptions options = joinOptions();
  options.named = namedDocuments();
  loader_.load(
      paths, localJoinEnvironment(std::move(mapper)), options,
      [this, token](std::string stage, int percent) { client_.reportProgress(token, stage, percent); },
      [this, candidates, token](std::shared_ptr<LoadedProfile> loaded, std::string error) {
        onProfileLoaded(std::move(loaded), std::move(error), candidates, token);
      },
      compiledCodeSearch());
}

void Workspace::onProfileLoaded(std::shared_ptr<LoadedProfile> loaded, std::string error, std::vector<std::string> rest,
                                const std::string& token) {
  if (stopped_) return;
  if (token == progress_token_) progress_token_.clear();
  if (!loaded) {
    SL_LOG(Warn) << "profile: " << error;
    client_.endProgress(token, error);
    if (!rest.empty() && settings_.profiles.empty()) {
      loadProfiles(std::move(rest), "the next newest profile in the workspace");
      return;
    }
    if (profile_ && load_retries_ > 0) {
      // A reload after the file changed failed (a half-written file?): keep the old numbers, retry.
      --load_retries_;
      pending_mtime_ = 0;
      watchProfile();
      return;
    }
    profile_error_ = error;
    client_.profileStatusChanged();
    // Once per failed load, where the user looks (the status line alone is easy to miss).
    client_.showMessage(1, "Sightline could not load the profile: " + error);
    return;
  }
  // A script opened while it loaded opens ranges the profile recorded: load again with it named,
  // before anyone sees figures without it.
  for (Document* doc : documents_.all())
    if (namesRanges(*loaded, *doc)) {
      auto path = uriToPath(doc->uri());
      client_.endProgress(token, "again, with " + std::filesystem::path(path.value_or("")).filename().string());
      loadProfiles(loaded->parts,
                   std::filesystem::path(path.value_or("")).filename().string() + " opens its NVTX ranges");
      return;
    }
  load_retries_ = 0;
  profile_ = std::move(loaded);
  profile_error_.clear();
  ++profile_generation_;
  costs_.clear();
  computeRegression();
  // The new numbers are for the files as they are now: line tracking starts over.
  for (Document* doc : documents_.all()) doc->rebaseLines();
  watched_mtime_ = profile_->file_mtime_ns;
  pending_mtime_ = 0;
  const auto& a = profile_->attr();
  client_.endProgress(token, std::to_string(a.steps) + " steps, " +
                                 features::formatMilliseconds(static_cast<double>(a.total_gpu_ns)) + " ms GPU time");
  SL_LOG(Info) << "profile loaded: " << profile_->path;
  client_.profileStatusChanged();
  client_.hintsChanged();
  client_.findingsChanged();
  watchProfile();
}

void Workspace::watchProfile() {
  if (!profile_ || stopped_) return;
  watch_timer_.expires_after(profile_poll_);
  watch_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopped_ || !profile_) return;
    int64_t now = fileMtimeNs(profile_->path);
    if (now == 0 || now == watched_mtime_) {
      pending_mtime_ = 0;
    } else if (now != pending_mtime_) {
      pending_mtime_ = now;  // changed: wait one more period for it to settle
    } else if (!loader_.busy()) {
      SL_LOG(Info) << "profile changed on disk: reloading " << profile_->path;
      watched_mtime_ = now;
      load_retries_ = 5;
      loadProfiles({profile_->path}, "the file changed");
      return;
    }
    watchProfile();
  });
}

attribution::PathMapper Workspace::workspaceMapper() const {
  attribution::PathMapper mapper;
  for (auto rule : settings_.path_mappings) {
    auto at = rule.to.find("${workspaceFolder}");
    if (at != std::string::npos) rule.to.replace(at, 18, root_.empty() ? "." : root_);
    mapper.rules.push_back(rule);
  }
  mapper.root = root_;
  mapper.exists = existsWithin(scopeOf(mapper));
  return mapper;
}

const features::FileCosts* Workspace::costsFor(Document& doc) {
  if (!profile_) return nullptr;
  auto cached = costs_.find(doc.uri());
  if (cached == costs_.end() || cached->second.profile_generation != profile_generation_) {
    auto path = uriToPath(doc.uri());
    if (!path) return nullptr;
    auto joined = join::joinFile(*profile_->join, compare_ ? compare_->join.get() : nullptr, normalPath(*path),
                                 doc.file(), doc.index(), &doc.lineTracker());
    // A compare profile of another version of the script is matched by line number in the
    // regression (its summaries hold no text): its changes would land on the wrong lines.
    if (regression_ && joined.compare_alignment.empty()) {
      auto mapper = workspaceMapper();
      std::string here = normalPath(*path);
      attachRegressions(
          *regression_,
          [&](const std::string& profile_path) {
            auto local = mapper.map(profile_path);
            return local && normalPath(*local) == here;
          },
          joined.measured);
    }
    cached = costs_.insert_or_assign(doc.uri(), CostsSlot{profile_generation_, std::move(joined), 0, {}}).first;
    cached->second.line_generation = doc.lineGeneration() + 1;  // remapped below
  }
  auto& slot = cached->second;
  if (slot.line_generation != doc.lineGeneration()) {
    std::string compare_name = compare_ ? std::filesystem::path(compare_->path).filename().string() : "";
    std::string note =
        slot.joined.compare_alignment.empty() ? "" : "the script changed in between: " + slot.joined.compare_alignment;
    slot.current = join::currentCosts(slot.joined, doc.lineTracker(), compare_name, note);
    slot.line_generation = doc.lineGeneration();
  }
  return &slot.current;
}

std::vector<features::Finding> Workspace::computeFindings(Document& doc) {
  const auto& findings = doc.findings(settings_.rules, settings_generation_, settings_.rule_budget_ms);
  const features::FileCosts* costs = costsFor(doc);
  if (!costs) return findings;
  auto out = features::confirmWithProfile(findings, doc.file(), doc.index(), *costs, profile_->profile(),
                                          profile_->verdict ? &*profile_->verdict : nullptr, settings_.rules,
                                          settings_.thresholds);
  auto path = uriToPath(doc.uri());
  std::string name = path ? std::filesystem::path(*path).filename().string() : doc.uri();
  if (auto regressed = features::regressionFindings(doc.file(), *costs, settings_.rules); !regressed.empty()) {
    out.insert(out.end(), std::make_move_iterator(regressed.begin()), std::make_move_iterator(regressed.end()));
    std::stable_sort(out.begin(), out.end(), [](const features::Finding& a, const features::Finding& b) {
      return a.range.begin < b.range.begin;
    });
  }
  const auto& joined = costs_[doc.uri()].joined;
  if (auto f = features::sourceMismatchFinding(doc.file(), doc.index(), joined.anchors, profile_->profile(),
                                               settings_.rules, name, &doc.lineTracker(), &joined.measured))
    out.insert(out.begin(), std::move(*f));
  return out;
}

const std::vector<features::Finding>& Workspace::findingsFor(Document& doc) {
  auto& slot = findings_[doc.uri()];
  bool fresh = slot.line_generation == doc.lineGeneration() && slot.profile_generation == profile_generation_ &&
               slot.settings_generation == settings_generation_ && slot.settings_generation != 0;
  if (!fresh) {
    slot.findings = computeFindings(doc);
    for (const auto& stopped : doc.stoppedRules())
      client_.logMessage(2, "rule " + stopped.codes + " stopped after " + std::to_string(stopped.used_ns / 1000000) +
                                " ms on " + doc.uri() + " (ruleBudgetMs); its findings from line " +
                                std::to_string(doc.file().lines().pointAt(stopped.stopped_at).line + 1) +
                                " on are missing");
    slot.line_generation = doc.lineGeneration();
    slot.profile_generation = profile_generation_;
    slot.settings_generation = settings_generation_;
  }
  return slot.findings;
}

}  // namespace sightline::server
