#include "run/preflight.h"

#include <attnprof/error.h>
#include <attnprof/variant.h>
#include <gtest/gtest.h>

using namespace attnprof;

TEST(Preflight, MemAvailableFromMeminfo) {
  EXPECT_EQ(parse_mem_available("MemTotal:       16384000 kB\nMemFree:  100 kB\nMemAvailable:    8000000 kB\n"),
            8000000LL * 1024);
  EXPECT_FALSE(parse_mem_available("MemTotal: 1 kB\n"));
  auto real = free_device_bytes(Device::cpu);
  ASSERT_TRUE(real);
  EXPECT_GT(*real, 0);
}

TEST(Preflight, EstimateCountsInputsOutputAndWorkspace) {
  AttentionSpec spec;  // 8, 16, 1024, 64, bf16
  Variant* naive = find_variant("naive");
  ASSERT_NE(naive, nullptr);
  std::int64_t io = 4LL * 8 * 16 * 1024 * 64 * 2;  // q, k, v, out
  EXPECT_EQ(estimate_run_bytes(spec, *naive), io + naive->workspace_estimate(spec));
  // naive keeps the S×S scores: at least one bf16 B·H·S·S buffer.
  EXPECT_GE(naive->workspace_estimate(spec), 8LL * 16 * 1024 * 1024 * 2);
}

TEST(Preflight, LargestFittingSeqIsTheBoundary) {
  AttentionSpec spec;
  Variant* naive = find_variant("naive");
  std::int64_t budget = 1LL << 30;
  std::int64_t s = largest_fitting_seq(spec, *naive, budget);
  ASSERT_GT(s, 0);
  AttentionSpec fits = spec, over = spec;
  fits.seq_q = fits.seq_k = s;
  over.seq_q = over.seq_k = s + 1;
  EXPECT_LE(estimate_run_bytes(fits, *naive), budget);
  EXPECT_GT(estimate_run_bytes(over, *naive), budget);
}

TEST(Preflight, RefusesAShapeBeyondTheMachineNamingTheLargestSeq) {
  AttentionSpec spec;
  spec.batch = 4096;
  spec.heads = 64;
  spec.kv_heads = 64;
  spec.seq_q = spec.seq_k = 65536;  // naive's scores alone: 4096·64·65536²·2 B = 2 EiB
  Variant* naive = find_variant("naive");
  try {
    preflight_memory(spec, *naive);
    FAIL() << "a 2 EiB run passed the preflight";
  } catch (const UsageError& e) {
    std::string text = e.what();
    EXPECT_NE(text.find("largest --seq that fits"), std::string::npos) << text;
    EXPECT_NE(text.find("free"), std::string::npos) << text;
  }
}
