#pragma once
// A TimeStats in milliseconds as attnprof prints it: the JSON object every result carries
// ("time_stats") and the text of a median with its min–max spread.
#include <attnprof/time_stats.h>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace attnprof::report {

// {"count", "median_ms", "min_ms", "max_ms", "p10_ms", "p90_ms"} of stats already in ms.
nlohmann::json time_stats_json(const TimeStats& ms);
// The inverse; a missing or malformed object gives count 0.
TimeStats time_stats_from_json(const nlohmann::json& json);

// A time in ms with the digits its size deserves: 123.4, 1.234, 0.1234.
std::string ms_text(double ms);
// "1.198–1.305" (min–max, ms); "-" when nothing was measured.
std::string spread_text(const TimeStats& ms);
// "1.234 ms (min–max 1.198–1.305 ms, 10 forwards)"; `counted` names what was measured ("backward").
std::string median_with_spread(const TimeStats& ms, std::string_view counted = "forward");

}  // namespace attnprof::report
