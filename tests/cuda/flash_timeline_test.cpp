// The sm90-v7 timeline's host side on fabricated records (no GPU): decoding the kernel's words,
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
                     std::uint64_t end_ns) {
  FlashTileTiming t;
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
  return {pass(0, 0, 0, 2, 1000, 1100, 2100, 2300, 10000, 12000), pass(0, 0, 1, 2, 1000, 1200, 2200, 2400, 10000, 12500),
          pass(1, 1, 0, 2, 5000, 5100, 6100, 6200, 11000, 13000), pass(1, 1, 1, 2, 5000, 5100, 6100, 6300, 11000, 13500),
          pass(2, 0, 0, 1, 2350, 2400, 2900, 3000, 13000, 14000), pass(2, 0, 1, 1, 2400, 2450, 2950, 3050, 13000, 14500)};
}

std::vector<std::uint64_t> words_of(const std::vector<FlashTileTiming>& timings) {
  std::vector<std::uint64_t> words;
  for (const FlashTileTiming& t : timings) {
    words.push_back((static_cast<std::uint64_t>(t.sm) << 40) | (static_cast<std::uint64_t>(t.consumer) << 32) |
                    static_cast<std::uint64_t>(t.key_tiles));
    for (std::uint64_t w : {t.begin, t.q_ready, t.mainloop_end, t.epilogue_end, t.begin_ns, t.end_ns}) words.push_back(w);
  }
  return words;
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
    EXPECT_EQ(out[i].end_ns, in[i].end_ns);
  }
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
  // Read as tiles of 3 warpgroups, the third record (warpgroup 2 of tile 0) names warpgroup 0.
  EXPECT_THROW(cuda::hopper::decode_flash_timeline(words, 3), Error);
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
