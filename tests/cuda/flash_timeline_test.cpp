// The sm90 tile-counter kernel timeline's host side on fabricated records (no GPU): decoding the kernel's words,
// the summary's means, shares and SM balance worked out by hand, and the Chrome trace's slices.
#include <attnprof/error.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <vector>

#include "cuda/hopper/flash_timeline.h"

using namespace attnprof;
using cuda::hopper::FlashTileTiming;

namespace {

FlashTileTiming pass(int tile, int sm, int consumer, int key_tiles, std::uint64_t begin, std::uint64_t q_ready,
                     std::uint64_t mainloop_end, std::uint64_t epilogue_end, std::uint64_t begin_ns,
                     std::uint64_t end_ns, std::uint64_t q_issued) {
  FlashTileTiming t;
  t.q_issued = q_issued;
  t.tile = tile;
  t.sm = sm;
  t.consumer = consumer;
  t.key_tiles = key_tiles;
  t.begin = begin;
  t.q_ready = q_ready;
  t.mainloop_end = mainloop_end;
  t.epilogue_end = epilogue_end;
  t.begin_ns = begin_ns;
  t.end_ns = end_ns;
  return t;
}

// Tiles 0 and 2 on SM 0, tile 1 on SM 1, two warpgroups each.
std::vector<FlashTileTiming> sample() {
  return {pass(0, 0, 0, 2, 1000, 1100, 2100, 2300, 10000, 12000, 900),
          pass(0, 0, 1, 2, 1000, 1200, 2200, 2400, 10000, 12500, 900),
          pass(1, 1, 0, 2, 5000, 5100, 6100, 6200, 11000, 13000, 4800),
          pass(1, 1, 1, 2, 5000, 5100, 6100, 6300, 11000, 13500, 4800),
          pass(2, 0, 0, 1, 2350, 2400, 2900, 3000, 13000, 14000, 2300),
          pass(2, 0, 1, 1, 2400, 2450, 2950, 3050, 13000, 14500, 2300)};
}

// The kernel's words for `timings`: each (SM, warpgroup) lane's first pass carries its begin_ns as
// the start anchor, its last the end_ns and epilogue_end as the end anchor (so decoding must place
// the passes between on the line through those two points).
std::vector<std::uint64_t> words_of(const std::vector<FlashTileTiming>& timings) {
  std::vector<std::uint64_t> words;
  for (const FlashTileTiming& t : timings) {
    bool first = true, last = true;
    for (const FlashTileTiming& other : timings) {
      if (other.sm != t.sm || other.consumer != t.consumer) continue;
      first = first && other.begin >= t.begin;
      last = last && other.begin <= t.begin;
    }
    words.push_back((static_cast<std::uint64_t>(t.sm) << 40) | (static_cast<std::uint64_t>(t.consumer) << 32) |
                    static_cast<std::uint64_t>(t.key_tiles));
    for (std::uint64_t w : {t.begin, t.q_ready, t.mainloop_end, t.epilogue_end, first ? t.begin_ns : 0,
                            last ? t.end_ns : 0, last ? t.epilogue_end : 0, t.q_issued})
      words.push_back(w);
  }
  return words;
}

// One lane at 2 ns a cycle: passes at clocks 1000..3000 and 3500..4000, anchors 10000 ns at clock
// 1000 and 16000 ns at clock 4000.
std::vector<FlashTileTiming> two_ns_per_cycle() {
  return {pass(0, 3, 0, 2, 1000, 1100, 2800, 3000, 10000, 0, 900), pass(1, 3, 0, 1, 3500, 3600, 3900, 4000, 0, 16000, 3400)};
}

}  // namespace

TEST(FlashTimeline, DecodesTheKernelsWords) {
  const std::vector<FlashTileTiming> in = sample();
  const std::vector<FlashTileTiming> out = cuda::hopper::decode_flash_timeline(words_of(in), 2);
  ASSERT_EQ(out.size(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].tile, in[i].tile);
    EXPECT_EQ(out[i].sm, in[i].sm);
    EXPECT_EQ(out[i].consumer, in[i].consumer);
    EXPECT_EQ(out[i].key_tiles, in[i].key_tiles);
    EXPECT_EQ(out[i].mainloop_end, in[i].mainloop_end);
  }
  // The lanes' first start and last end are their anchors.
  EXPECT_EQ(out[0].begin_ns, 10000u);  // SM 0 warpgroup 0, first pass
  EXPECT_EQ(out[4].end_ns, 14000u);    // its last pass
  // SM 0 warpgroup 0 runs clocks 1000..3000 over 10000..14000 ns: 2 ns a cycle, so its first
  // pass ends (clock 2300) at 12600 ns and its second starts (2350) at 12700.
  EXPECT_EQ(out[0].end_ns, 12600u);
  EXPECT_EQ(out[4].begin_ns, 12700u);
  // One lane of one pass: both anchors on it.
  EXPECT_EQ(out[2].begin_ns, 11000u);
  EXPECT_EQ(out[2].end_ns, 13000u);
}

TEST(FlashTimeline, PlacesPassesBetweenTheAnchorsOfTheirLane) {
  const std::vector<FlashTileTiming> out = cuda::hopper::decode_flash_timeline(words_of(two_ns_per_cycle()), 1);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].begin_ns, 10000u);
  EXPECT_EQ(out[0].end_ns, 14000u);  // clock 3000: 2000 cycles in
  EXPECT_EQ(out[1].begin_ns, 15000u);  // clock 3500
  EXPECT_EQ(out[1].end_ns, 16000u);
}

TEST(FlashTimeline, UnwrittenOrInconsistentRecordsAreErrors) {
  std::vector<std::uint64_t> words = words_of(sample());
  EXPECT_THROW(cuda::hopper::decode_flash_timeline(std::vector<std::uint64_t>(words.begin(), words.end() - 1), 2), Error);
  std::vector<std::uint64_t> unwritten = words;
  for (int w = 0; w < cuda::hopper::kTimelineWords; ++w) unwritten[3 * cuda::hopper::kTimelineWords + w] = 0;
  EXPECT_THROW(cuda::hopper::decode_flash_timeline(unwritten, 2), Error);
  std::vector<std::uint64_t> backwards = words;
  backwards[3] = backwards[2] - 1;  // main loop ends before Q arrived
  EXPECT_THROW(cuda::hopper::decode_flash_timeline(backwards, 2), Error);
  std::vector<std::uint64_t> q_after_ready = words;
  q_after_ready[8] = q_after_ready[2] + 1;  // the producer's issue after the consumer saw Q
  EXPECT_THROW(cuda::hopper::decode_flash_timeline(q_after_ready, 2), Error);
  // Read as tiles of 3 warpgroups, the third record (warpgroup 2 of tile 0) names warpgroup 0.
  EXPECT_THROW(cuda::hopper::decode_flash_timeline(words, 3), Error);
  // A lane without its start anchor, or without its end anchor.
  std::vector<std::uint64_t> no_start = words_of(two_ns_per_cycle());
  no_start[5] = 0;
  EXPECT_THROW(cuda::hopper::decode_flash_timeline(no_start, 1), Error);
  std::vector<std::uint64_t> no_end = words_of(two_ns_per_cycle());
  no_end[cuda::hopper::kTimelineWords + 6] = 0;
  EXPECT_THROW(cuda::hopper::decode_flash_timeline(no_end, 1), Error);
}

TEST(FlashTimeline, SummaryMatchesTheHandWorkedNumbers) {
  const cuda::hopper::FlashTimelineSummary s = cuda::hopper::summarize_flash_timeline(sample());
  EXPECT_EQ(s.passes, 6);
  EXPECT_EQ(s.key_tiles, 10);
  EXPECT_EQ(s.sms, 2);
  EXPECT_DOUBLE_EQ(s.q_wait_cycles, 100.0);                // (100+200+100+100+50+50) / 6
  EXPECT_DOUBLE_EQ(s.mainloop_cycles_per_key_tile, 500.0);  // 5000 / 10
  EXPECT_DOUBLE_EQ(s.epilogue_cycles, 150.0);               // 900 / 6
  EXPECT_DOUBLE_EQ(s.between_cycles, 25.0);                 // SM 0: 2350−2300 and 2400−2400
  EXPECT_DOUBLE_EQ(s.later_q_wait_cycles, 50.0);            // tile 2 on both lanes of SM 0: 50 and 50
  EXPECT_DOUBLE_EQ(s.q_issue_lead_cycles, 125.0);           // (100+100+200+200+50+100) / 6
  EXPECT_DOUBLE_EQ(s.q_issue_to_ready_cycles, 225.0);       // (200+300+300+300+100+150) / 6
  // Lane spans 2000 + 2050 + 1200 + 1300 = 6550 cycles; the four parts fill them exactly.
  EXPECT_DOUBLE_EQ(s.share_q_wait, 600.0 / 6550);
  EXPECT_DOUBLE_EQ(s.share_mainloop, 5000.0 / 6550);
  EXPECT_DOUBLE_EQ(s.share_epilogue, 900.0 / 6550);
  EXPECT_DOUBLE_EQ(s.share_between, 50.0 / 6550);
  EXPECT_NEAR(s.share_q_wait + s.share_mainloop + s.share_epilogue + s.share_between, 1.0, 1e-12);
  // SM 0 runs 10000..14500 ns, SM 1 11000..13500: span 4500, SM 1 idle 1000 + 1000 of 2 × 4500.
  EXPECT_DOUBLE_EQ(s.span_ns, 4500.0);
  EXPECT_DOUBLE_EQ(s.end_spread_ns, 1000.0);
  EXPECT_DOUBLE_EQ(s.idle_share, 2000.0 / 9000.0);
  const std::string text = cuda::hopper::flash_timeline_text(s, 256.0);
  EXPECT_NE(text.find("main loop 500 cycles a key tile (the CTA's GEMMs at the tensor cores' peak: 256)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("22.2% of it idle"), std::string::npos) << text;
  EXPECT_NE(text.find("Q: 50 cycles of wait after a warpgroup's first pass; issued 125 cycles before"), std::string::npos) << text;
  EXPECT_THROW(cuda::hopper::summarize_flash_timeline({}), Error);
}

TEST(FlashTimeline, ChromeTracePlacesEachPassOnTheGlobalTimer) {
  const nlohmann::json doc = nlohmann::json::parse(cuda::hopper::flash_timeline_chrome_trace(sample()));
  const auto& events = doc["traceEvents"];
  ASSERT_EQ(events.size(), 18u);
  // Tile 0, SM 0, warpgroup 0: 1300 cycles over 2000 ns; its main loop starts 100 cycles in.
  const auto& main_loop = events[1];
  EXPECT_EQ(main_loop["name"], "main loop");
  EXPECT_EQ(main_loop["pid"], 0);
  EXPECT_EQ(main_loop["tid"], 0);
  EXPECT_NEAR(main_loop["ts"].get<double>(), 100.0 * 2000 / 1300 / 1000, 1e-9);
  EXPECT_NEAR(main_loop["dur"].get<double>(), 1000.0 * 2000 / 1300 / 1000, 1e-9);
  EXPECT_EQ(main_loop["args"]["cycles"], 1000);
  // Tile 1 starts on SM 1 1 µs after the first pass.
  EXPECT_EQ(events[6]["name"], "wait for Q");
  EXPECT_EQ(events[6]["pid"], 1);
  EXPECT_NEAR(events[6]["ts"].get<double>(), 1.0, 1e-9);
}
