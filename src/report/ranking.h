#pragma once
// Which variant is fastest, said only as far as the spreads allow: a variant whose min–max
// spread overlaps the fastest one's is "within noise of" it, never ranked below it in words.
#include <string>
#include <vector>

#include "report/glance.h"

namespace attnprof::report {

struct Ranking {
  // The variant with the lowest median first, then every measured variant whose spread
  // overlaps its spread (in median order): together they are the fastest, within noise.
  std::vector<std::string> fastest;
  std::string sentence;  // empty with fewer than two measured rows
};

Ranking rank_rows(const std::vector<GlanceRow>& rows);

}  // namespace attnprof::report
