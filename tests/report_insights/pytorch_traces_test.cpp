// The insight rules and --expect on PyTorch's own traces (tests/data/pytorch-traces, copied
// from the anchors): what the blog read off these traces by hand, derived.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "report/expect.h"
#include "report/insights.h"
#include "trace/reader.h"

namespace attnprof::report {
namespace {

trace::Trace anchor(const std::string& variant) {
  const char* dir = std::getenv("ATTNPROF_SOURCE_DIR");
  return trace::read_trace_file(std::string(dir ? dir : ATTNPROF_TEST_SOURCE_DIR) +
                                "/tests/data/pytorch-traces/8_16_1024_64_" + variant + ".json.gz");
}

std::vector<std::string> codes(const std::vector<Insight>& insights) {
  std::vector<std::string> out;
  for (const auto& i : insights) out.push_back(i.code);
  return out;
}

bool has(const std::vector<Insight>& insights, const std::string& code) {
  auto c = codes(insights);
  return std::find(c.begin(), c.end(), code) != c.end();
}

std::string text_of(const std::vector<Insight>& insights, const std::string& code) {
  for (const auto& i : insights) {
    if (i.code == code) return i.text;
  }
  return {};
}

TEST(PyTorchTraces, NaiveHidesACopyInMaskedFill) {
  trace::Trace t = anchor("naive");
  TraceWork work = collect_forwards(t);
  ASSERT_EQ(work.forwards.size(), 3u);
  EXPECT_DOUBLE_EQ(work.kernels_per_forward(), 5.0);
  EXPECT_DOUBLE_EQ(work.per_forward(KernelClass::memcpy), 1.0);
  EXPECT_DOUBLE_EQ(work.per_forward(KernelClass::memset), 1.0);
  auto insights = derive_insights(t, {});
  ASSERT_TRUE(has(insights, "hidden_copy"));
  EXPECT_NE(text_of(insights, "hidden_copy").find("aten::masked_fill is out of place"), std::string::npos);
  EXPECT_NE(text_of(insights, "hidden_copy").find("256.0 MiB"), std::string::npos);
  // Both nvjet GEMMs record 0%: their 213,188 B and 163,972 B of shared memory are over the 49,152 B
  // (deviceProperties.sharedMemPerBlock) Kineto's calculator assumes.
  ASSERT_TRUE(has(insights, "occupancy_recorded_zero"));
  EXPECT_NE(text_of(insights, "occupancy_recorded_zero")
                .find("for 2 kernels; Kineto writes 0 when its occupancy calculator fits no block"),
            std::string::npos)
      << text_of(insights, "occupancy_recorded_zero");
  EXPECT_NE(text_of(insights, "occupancy_recorded_zero").find("no block of 213,188 B fits the 49,152 B"),
            std::string::npos)
      << text_of(insights, "occupancy_recorded_zero");
  EXPECT_FALSE(has(insights, "fp32_gemm_cuda_cores"));
  EXPECT_FALSE(has(insights, "mask_rebuilt"));
  EXPECT_FALSE(has(insights, "single_fused_kernel"));
}

TEST(PyTorchTraces, MathRunsFp32GemmsRebuildsTheMaskAndGuardsTheSoftmax) {
  auto insights = derive_insights(anchor("math"), {});
  EXPECT_TRUE(has(insights, "fp32_gemm_cuda_cores"));
  EXPECT_NE(text_of(insights, "fp32_gemm_cuda_cores").find("2 of 2 GEMM kernels"), std::string::npos);
  EXPECT_TRUE(has(insights, "mask_rebuilt"));
  EXPECT_NE(text_of(insights, "mask_rebuilt").find("aten::ones, aten::tril"), std::string::npos);
  EXPECT_TRUE(has(insights, "safe_softmax"));
  EXPECT_NE(text_of(insights, "safe_softmax").find("aten::isneginf, aten::all"), std::string::npos);
  EXPECT_FALSE(has(insights, "hidden_copy"));  // its copies are explicit conversions (aten::to)
  EXPECT_FALSE(has(insights, "single_fused_kernel"));
}

TEST(PyTorchTraces, FlashIsOneKernelAtLowOccupancyByDesign) {
  auto insights = derive_insights(anchor("flash"), {});
  EXPECT_TRUE(has(insights, "single_fused_kernel"));
  ASSERT_TRUE(has(insights, "low_occupancy_by_design"));
  EXPECT_NE(text_of(insights, "low_occupancy_by_design")
                .find("pytorch_flash::flash_fwd_kernel: 255 regs \u00d7 128 threads = 32,640 of 65,536 \u2192 2 blocks "
                      "\u2192 8 of 64 warps = 12.5% (limited by registers; the trace records 13%)"),
            std::string::npos)
      << text_of(insights, "low_occupancy_by_design");
  EXPECT_FALSE(has(insights, "hidden_copy"));
  EXPECT_FALSE(has(insights, "occupancy_recorded_zero"));  // it records 13%
}

TEST(PyTorchTraces, TheBlogsGuessForNaiveMissesTheCopy) {
  ExpectResult r = compare_expect(parse_expect("gemm,mul,masked_fill,softmax,gemm"), anchor("naive"));
  EXPECT_EQ(r.matched(), 5);
  EXPECT_TRUE(r.missing().empty());
  ASSERT_EQ(r.not_guessed().size(), 1u);
  EXPECT_EQ(r.observed[r.not_guessed()[0]].kind, KernelClass::memcpy);
  EXPECT_EQ(r.observed[r.not_guessed()[0]].path, "aten::masked_fill \u203a aten::clone \u203a aten::copy_");
  EXPECT_TRUE(compare_expect(parse_expect("gemm,mul,copy,masked_fill,softmax,gemm"), anchor("naive")).exact());
  EXPECT_TRUE(compare_expect(parse_expect("flash"), anchor("flash")).exact());
}

}  // namespace
}  // namespace attnprof::report
