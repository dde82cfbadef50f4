#include "report/time_stats_text.h"

#include <fmt/format.h>

namespace attnprof::report {

nlohmann::json time_stats_json(const TimeStats& ms) {
  return {{"count", ms.count}, {"median_ms", ms.median}, {"min_ms", ms.min},
          {"max_ms", ms.max},  {"p10_ms", ms.p10},       {"p90_ms", ms.p90}, {"processes", ms.processes}};
}

TimeStats time_stats_from_json(const nlohmann::json& json) {
  TimeStats ms;
  if (!json.is_object() || !json.contains("count") || !json["count"].is_number_integer()) return ms;
  auto number = [&](const char* key) { return json.contains(key) && json[key].is_number() ? json[key].get<double>() : 0.0; };
  ms.count = json["count"].get<int>();
  ms.median = number("median_ms");
  ms.min = number("min_ms");
  ms.max = number("max_ms");
  ms.p10 = number("p10_ms");
  ms.p90 = number("p90_ms");
  if (json.contains("processes") && json["processes"].is_number_integer()) ms.processes = json["processes"].get<int>();
  return ms;
}

std::string ms_text(double ms) {
  if (ms >= 100) return fmt::format("{:.1f}", ms);
  if (ms >= 1) return fmt::format("{:.3f}", ms);
  return fmt::format("{:.4f}", ms);
}

std::string spread_text(const TimeStats& ms) {
  if (ms.count == 0) return "-";
  return ms_text(ms.min) + "\u2013" + ms_text(ms.max);
}

std::string median_with_spread(const TimeStats& ms, std::string_view counted) {
  return fmt::format("{} ms (min\u2013max {} ms, {} {}{})", ms_text(ms.median), spread_text(ms), ms.count, counted,
                     ms.count == 1 ? "" : "s");
}

}  // namespace attnprof::report
