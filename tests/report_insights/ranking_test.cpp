// The ranking sentence against hand-made spreads: clear of the next, and within noise.
#include "report/ranking.h"

#include <gtest/gtest.h>

#include <sstream>

namespace attnprof::report {
namespace {

GlanceRow timed(const std::string& name, std::vector<double> ms) {
  GlanceRow row;
  row.variant = name;
  row.time = time_stats(std::move(ms));
  row.device_ms = row.time.median;
  return row;
}

TEST(Ranking, ClearSpreadsNameOneFastest) {
  // flash 1.0–1.2 (median 1.1) and naive 2.0–2.4 do not meet: flash is the fastest
  const Ranking r = rank_rows({timed("naive", {2.0, 2.2, 2.4}), timed("flash", {1.0, 1.1, 1.2})});
  EXPECT_EQ(r.fastest, (std::vector<std::string>{"flash"}));
  EXPECT_EQ(r.sentence,
            "fastest: flash 1.100 ms (1.000\u20131.200); its min\u2013max spread is clear of the next, naive 2.200 ms "
            "(2.000\u20132.400)");
}

TEST(Ranking, OverlappingSpreadsAreWithinNoise) {
  // inplace 1.0–1.6 (median 1.2) and naive 1.5–2.0 (median 1.55) overlap on 1.5–1.6: neither is
  // ranked above the other; flash 3.0–3.1 is clear of both and is not named among the fastest
  const Ranking r = rank_rows({timed("naive", {1.5, 1.6, 2.0, 1.5}), timed("inplace", {1.0, 1.2, 1.6}),
                               timed("flash", {3.0, 3.1})});
  EXPECT_EQ(r.fastest, (std::vector<std::string>{"inplace", "naive"}));
  EXPECT_EQ(r.sentence,
            "no single fastest: inplace 1.200 ms (1.000\u20131.600) is within noise of naive 1.550 ms "
            "(1.500\u20132.000) (the min\u2013max spreads overlap, so none is ranked above another)");
  EXPECT_NE(r.sentence.rfind("fastest: ", 0), 0u);  // no variant is called the fastest
}

TEST(Ranking, RefusedAndLoneRowsAreNotRanked) {
  GlanceRow refused = refused_row("cudnn", "cuDNN SDPA", "needs a GPU");
  const Ranking lone = rank_rows({timed("flash", {1.0, 1.2}), refused});
  EXPECT_EQ(lone.fastest, (std::vector<std::string>{"flash"}));
  EXPECT_EQ(lone.sentence, "");
  EXPECT_TRUE(rank_rows({refused}).fastest.empty());
}

TEST(GlanceText, ListsEachInsightOnceNamingItsRows) {
  GlanceRow naive = timed("naive", {2.0, 2.2, 2.4});
  GlanceRow inplace = timed("inplace", {2.1, 2.3});
  naive.insights = {{"s2_materialized", "the S×S scores are written to memory"}, {"hidden_copy", "one copy"}};
  inplace.insights = {{"s2_materialized", "the S×S scores are written to memory"}};
  const std::string text = glance_text({naive, inplace}, 200, "1\u00d72\u00d764\u00d764 fp32");
  EXPECT_EQ(text.rfind("1\u00d72\u00d764\u00d764 fp32\n", 0), 0u) << text;
  EXPECT_NE(text.find("\u25b8 [naive, inplace] s2_materialized: the S\u00d7S scores are written to memory"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\u25b8 [naive] hidden_copy: one copy"), std::string::npos) << text;
  EXPECT_EQ(text.find("s2_materialized"), text.rfind("s2_materialized")) << text;  // once
  EXPECT_NE(text.find("within noise of"), std::string::npos) << text;               // 2.0–2.4 meets 2.1–2.3
  std::istringstream lines(glance_text({naive, inplace}, 40, "1\u00d72\u00d764\u00d764 fp32"));
  for (std::string line; std::getline(lines, line);) EXPECT_LE(display_width(line), 40u) << line;
}

}  // namespace
}  // namespace attnprof::report
