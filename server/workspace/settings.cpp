// Settings parsing: tolerant of junk (a bad value never rejects the whole section).
#include "server/workspace/settings.h"

#include "server/lsp/uri.h"

#ifndef SIGHTLINE_DOCS_DIR
#define SIGHTLINE_DOCS_DIR "docs"
#endif

namespace sightline::server {

namespace {

void applyRuleSetting(features::RuleConfig& config, const std::string& code, const nlohmann::json& value,
                      std::vector<std::string>& warnings) {
  if (!features::findRule(code)) {
    warnings.push_back("rules." + code + ": unknown rule");
    return;
  }
  features::RuleSetting setting;
  auto readSeverity = [&](const std::string& name) {
    if (name == "off") {
      setting.enabled = false;
    } else if (auto s = features::parseSeverity(name)) {
      setting.severity = s;
    } else {
      warnings.push_back("rules." + code + ": unknown severity \"" + name + "\"");
    }
  };
  if (value.is_string()) {
    readSeverity(value.get<std::string>());
  } else if (value.is_boolean()) {
    setting.enabled = value.get<bool>();
  } else if (value.is_object()) {
    if (auto e = value.find("enabled"); e != value.end() && e->is_boolean()) setting.enabled = e->get<bool>();
    if (auto s = value.find("severity"); s != value.end() && s->is_string()) readSeverity(s->get<std::string>());
  } else {
    warnings.push_back("rules." + code + ": expected a severity, a boolean or an object");
    return;
  }
  config.rules[code] = setting;
}

}  // namespace

Settings parseSettings(const nlohmann::json& section, std::vector<std::string>& warnings) {
  Settings s;
  if (section.is_null()) return s;
  if (!section.is_object()) {
    warnings.push_back("sightline settings: expected an object");
    return s;
  }
  if (auto rules = section.find("rules"); rules != section.end()) {
    if (rules->is_object()) {
      for (const auto& [code, value] : rules->items()) applyRuleSetting(s.rules, code, value, warnings);
    } else {
      warnings.push_back("rules: expected an object");
    }
  }
  if (auto window = section.find("profileWindow"); window != section.end() && window->is_object()) {
    auto first = window->find("firstStep");
    auto last = window->find("lastStep");
    if (first != window->end() && first->is_number_unsigned() && last != window->end() && last->is_number_unsigned() &&
        last->get<uint32_t>() >= first->get<uint32_t>()) {
      s.actions.profile_first_step = first->get<uint32_t>();
      s.actions.profile_last_step = last->get<uint32_t>();
    } else {
      warnings.push_back("profileWindow: expected {\"firstStep\": N, \"lastStep\": M} with M >= N");
    }
  }
  if (auto base = section.find("docsBaseUrl"); base != section.end() && base->is_string())
    s.docs_base_url = base->get<std::string>();
  if (auto profiles = section.find("profiles"); profiles != section.end()) {
    if (profiles->is_string()) {
      s.profiles.push_back(profiles->get<std::string>());
    } else if (profiles->is_array()) {
      for (const auto& p : *profiles)
        if (p.is_string()) s.profiles.push_back(p.get<std::string>());
    } else if (!profiles->is_null()) {
      warnings.push_back("profiles: expected a path or a list of paths");
    }
  }
  if (auto maps = section.find("pathMappings"); maps != section.end() && maps->is_array()) {
    for (const auto& m : *maps) {
      if (m.is_object() && m.contains("from") && m["from"].is_string() && m.contains("to") && m["to"].is_string())
        s.path_mappings.push_back({m["from"].get<std::string>(), m["to"].get<std::string>()});
      else
        warnings.push_back("pathMappings: expected {\"from\": ..., \"to\": ...} entries");
    }
  }
  if (auto hints = section.find("hints"); hints != section.end() && hints->is_object()) {
    if (auto e = hints->find("enabled"); e != hints->end() && e->is_boolean()) s.hints_enabled = e->get<bool>();
    if (auto m = hints->find("minShare"); m != hints->end()) {
      if (m->is_number() && m->get<double>() >= 0 && m->get<double>() <= 1)
        s.hints.min_share = m->get<double>();
      else
        warnings.push_back("hints.minShare: expected a number in [0, 1]");
    }
    if (auto u = hints->find("unit"); u != hints->end()) {
      if (*u == "perStep" || *u == "total")
        s.hints.per_step = *u == "perStep";
      else
        warnings.push_back("hints.unit: expected \"perStep\" or \"total\"");
    }
    if (auto b = hints->find("showBackward"); b != hints->end() && b->is_boolean())
      s.hints.show_backward = b->get<bool>();
    if (auto f = hints->find("show"); f != hints->end()) {
      if (*f == "both" || *f == "time" || *f == "memory")
        s.hints.figures = *f == "time"     ? features::HintFigures::Time
                          : *f == "memory" ? features::HintFigures::Memory
                                           : features::HintFigures::Both;
      else
        warnings.push_back("hints.show: expected \"both\", \"time\" or \"memory\"");
    }
  }
  if (auto c = section.find("compareWith"); c != section.end() && c->is_string())
    s.compare_with = c->get<std::string>();
  if (auto a = section.find("allSteps"); a != section.end()) {
    if (a->is_boolean())
      s.all_steps = a->get<bool>();
    else
      warnings.push_back("allSteps: expected true or false");
  }
  if (auto c = section.find("compiledCode"); c != section.end() && !c->is_null()) {
    if (c->is_string()) {
      s.compiled_code.push_back(c->get<std::string>());
    } else if (c->is_array()) {
      for (const auto& e : *c)
        if (e.is_string())
          s.compiled_code.push_back(e.get<std::string>());
        else
          warnings.push_back("compiledCode: expected paths (strings)");
    } else {
      warnings.push_back("compiledCode: expected a path or a list of paths");
    }
  }
  if (auto b = section.find("ruleBudgetMs"); b != section.end()) {
    if (b->is_number() && b->get<double>() >= 1 && b->get<double>() <= 3600000)
      s.rule_budget_ms = b->get<double>();
    else
      warnings.push_back("ruleBudgetMs: expected milliseconds from 1 to 3600000");
  }
  if (auto t = section.find("thresholds"); t != section.end()) parseThresholds(*t, s.thresholds, warnings);
  return s;
}

void parseThresholds(const nlohmann::json& object, features::ProfileRuleThresholds& out,
                     std::vector<std::string>& warnings) {
  if (object.is_null()) return;
  if (!object.is_object()) {
    warnings.push_back("thresholds: expected an object");
    return;
  }
  auto ns = [](double v, double unit) { return static_cast<int64_t>(v * unit + 0.5); };
  for (const auto& [key, value] : object.items()) {
    if (!value.is_number() || value.get<double>() < 0) {
      warnings.push_back("thresholds." + key + ": expected a number >= 0");
      continue;
    }
    double v = value.get<double>();
    if (key == "gpuIdleGapMs") {
      if (v <= 0)
        warnings.push_back("thresholds.gpuIdleGapMs: expected a number > 0");
      else
        out.gpu_idle_gap_ns = ns(v, 1e6);
    } else if (key == "gpuIdleMsPerStep") {
      out.gpu_idle_min_ns = ns(v, 1e6);
    } else if (key == "pageableKiBPerStep") {
      out.pageable_min_bytes = static_cast<uint64_t>(v * 1024 + 0.5);
    } else if (key == "syncApiMsPerStep") {
      out.sync_api_min_ns = ns(v, 1e6);
    } else if (key == "launchBoundKernelsPerStep") {
      out.launch_bound_min_kernels = v;
    } else if (key == "launchBoundMeanUs") {
      out.launch_bound_max_mean_ns = ns(v, 1e3);
    } else if (key == "rankImbalancePercent") {
      out.rank_imbalance_min_share = v / 100;
    } else if (key == "rankImbalanceMsPerStep") {
      out.rank_imbalance_min_ns = ns(v, 1e6);
    } else if (key == "exposedCommMsPerStep") {
      out.exposed_comm_min_ns = ns(v, 1e6);
    } else {
      warnings.push_back("thresholds." + key +
                         ": unknown threshold (gpuIdleGapMs, gpuIdleMsPerStep, pageableKiBPerStep, syncApiMsPerStep, "
                         "launchBoundKernelsPerStep, launchBoundMeanUs, rankImbalancePercent, rankImbalanceMsPerStep, "
                         "exposedCommMsPerStep)");
    }
  }
}

std::string ruleDocumentationUrl(const Settings& settings, std::string_view code) {
  if (!settings.docs_base_url.empty()) {
    std::string base = settings.docs_base_url;
    if (base.back() == '/') base.pop_back();
    return base + "/" + std::string(code) + ".md";
  }
  return pathToUri(std::string(SIGHTLINE_DOCS_DIR) + "/rules/" + std::string(code) + ".md");
}

}  // namespace sightline::server
