#include "report/ranking.h"

#include <fmt/format.h>

#include <algorithm>

#include "report/time_stats_text.h"

namespace attnprof::report {
namespace {

std::string timed(const GlanceRow& row) {
  return fmt::format("{} {} ms ({})", row.variant, ms_text(row.time.median), spread_text(row.time));
}

}  // namespace

Ranking rank_rows(const std::vector<GlanceRow>& rows) {
  std::vector<const GlanceRow*> measured;
  for (const GlanceRow& row : rows) {
    if (!row.refusal && row.time.count > 0) measured.push_back(&row);
  }
  std::stable_sort(measured.begin(), measured.end(),
                   [](const GlanceRow* a, const GlanceRow* b) { return a->time.median < b->time.median; });
  Ranking ranking;
  if (measured.empty()) return ranking;
  const GlanceRow& first = *measured.front();
  std::vector<const GlanceRow*> tied{&first};
  const GlanceRow* next = nullptr;
  for (std::size_t i = 1; i < measured.size(); ++i) {
    if (measured[i]->time.overlaps(first.time)) {
      tied.push_back(measured[i]);
    } else if (next == nullptr) {
      next = measured[i];
    }
  }
  for (const GlanceRow* row : tied) ranking.fastest.push_back(row->variant);
  if (measured.size() < 2) return ranking;
  if (tied.size() == 1) {
    ranking.sentence = fmt::format("fastest: {}; its min\u2013max spread is clear of the next, {}", timed(first),
                                   timed(*next));
    return ranking;
  }
  std::string names;
  for (std::size_t i = 1; i < tied.size(); ++i) names += (i > 1 ? ", " : "") + timed(*tied[i]);
  ranking.sentence = fmt::format(
      "no single fastest: {} is within noise of {} (the min\u2013max spreads overlap, so none is ranked above "
      "another)",
      timed(first), names);
  return ranking;
}

}  // namespace attnprof::report
