#include "report/glance.h"

#include <attnprof/error.h>

#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <sstream>

#include "report_insights/scenarios.h"

namespace attnprof::report {
namespace {

RunResult naive_result() {
  testing::TraceBuilder b;
  b.add_h200();
  for (int i = 0; i < 3; ++i) testing::gpu_naive_forward(b, 100000 * i, {});
  RunResult r;
  r.variant = "naive";
  r.summary = "matmul(q,k\u1d40) \u2192 mul(scale) \u2192 masked_fill (out of place) \u2192 softmax \u2192 matmul";
  r.spec.device = Device::cuda;
  r.median_ns = 1.123e6;
  r.cpu_ns = 0.315e6;
  r.peak_extra_bytes = 528LL << 20;
  r.rel_err = 3.6e-3;
  r.kernels_per_forward = 5;
  r.memcpy_per_forward = 1;
  r.memset_per_forward = 1;
  r.flops = 4.0 * 8 * 16 * 1024 * 1024 * 64 / 2;  // causal halves
  r.tflops = r.flops / r.median_ns / 1e3;
  r.trace_path = "traces/8_16_1024_64_naive_cuda.json.gz";
  r.trace = b.trace;
  return r;
}

TEST(Glance, RowCarriesNumbersAndInsights) {
  GlanceRow row = glance_row(naive_result(), 807.0);
  EXPECT_DOUBLE_EQ(row.device_ms, 1.123);
  EXPECT_DOUBLE_EQ(row.cpu_ms, 0.315);
  // 4·8·16·1024²·64 / 2 = 17,179,869,184 FLOPs in 1.123 ms = 15.298 TFLOP/s (the anchor's 15.3); 1.896% of 807.
  EXPECT_NEAR(row.tflops, 15.2982, 1e-4);
  EXPECT_NEAR(row.pct_of_peak, 1.89568, 1e-5);
  std::set<std::string> codes;
  for (const auto& i : row.insights) codes.insert(i.code);
  EXPECT_TRUE(codes.count("hidden_copy"));
  EXPECT_TRUE(codes.count("s2_materialized"));  // 528 MiB ≥ 256 MiB of bf16 scores
  EXPECT_TRUE(codes.count("occupancy_recorded_zero"));
  EXPECT_FALSE(codes.count("cpu_bound"));  // 0.315 ms of CPU against 1.123 ms on the GPU
}

// prepare()'s time: a column of the JSON, and an insight from 1 ms on (with how many forwards'
// device time it equals), none below.
TEST(Glance, OneTimeSetupIsNamedFromOneMillisecond) {
  RunResult r = naive_result();
  r.setup_ns = 64.1e6;  // 64.1 ms: a cuDNN plan build; 64.1 / 1.123 = 57.08 forwards
  GlanceRow row = glance_row(r, 807.0);
  EXPECT_DOUBLE_EQ(row.setup_ms, 64.1);
  const Insight* setup = nullptr;
  for (const auto& i : row.insights)
    if (i.code == "one_time_setup") setup = &i;
  ASSERT_NE(setup, nullptr);
  EXPECT_NE(setup->text.find("64.1 ms of one-time setup"), std::string::npos) << setup->text;
  EXPECT_NE(setup->text.find("as long as 57 forwards"), std::string::npos) << setup->text;
  EXPECT_EQ(glance_row_json(row)["setup_ms"], 64.1);
  EXPECT_DOUBLE_EQ(glance_row_from_json(glance_row_json(row)).setup_ms, 64.1);
  r.setup_ns = 0.99e6;
  for (const auto& i : glance_row(r, 807.0).insights) EXPECT_NE(i.code, "one_time_setup");
  EXPECT_FALSE(rules::one_time_setup(0.0, 1.0e6).has_value());
  EXPECT_EQ(rules::one_time_setup(2.0e6, 0.0)->text.find("forwards"), std::string::npos);  // no device time: no ratio
}

TEST(Glance, NoPeakMeansNoPercent) {
  EXPECT_DOUBLE_EQ(glance_row(naive_result(), 0).pct_of_peak, 0.0);
}

TEST(Glance, JsonHasTheDocumentedKeys) {
  nlohmann::json j = glance_json({glance_row(naive_result(), 807.0), refused_row("cudnn", "cuDNN SDPA", "needs a GPU")});
  ASSERT_TRUE(j.contains("rows"));
  ASSERT_EQ(j["rows"].size(), 2u);
  const auto& row = j["rows"][0];
  for (const char* key : {"variant", "kernels_per_forward", "memcpy_per_forward", "memset_per_forward", "device_ms",
                          "cpu_ms", "setup_ms", "peak_extra_bytes", "tflops", "pct_of_peak", "rel_err", "insights"}) {
    EXPECT_TRUE(row.contains(key)) << key;
  }
  EXPECT_EQ(row["variant"], "naive");
  EXPECT_EQ(row["kernels_per_forward"], 5.0);
  EXPECT_EQ(row["peak_extra_bytes"], 528LL << 20);
  EXPECT_EQ(row["rel_err"], 3.6e-3);
  ASSERT_TRUE(row["insights"].is_array());
  EXPECT_EQ(row["insights"][0]["code"], "hidden_copy");
  EXPECT_TRUE(row["insights"][0]["text"].is_string());
  const auto& refused = j["rows"][1];
  EXPECT_EQ(refused["refused"], "needs a GPU");
  EXPECT_TRUE(refused["device_ms"].is_null());
  EXPECT_TRUE(refused["tflops"].is_null());
}

TEST(Glance, JsonRoundTrips) {
  GlanceRow row = glance_row(naive_result(), 807.0);
  GlanceRow back = glance_row_from_json(glance_row_json(row));
  EXPECT_EQ(back.variant, row.variant);
  EXPECT_DOUBLE_EQ(back.device_ms, row.device_ms);
  EXPECT_EQ(back.peak_extra_bytes, row.peak_extra_bytes);
  EXPECT_EQ(back.insights.size(), row.insights.size());
  EXPECT_EQ(back.trace_path, row.trace_path);
  GlanceRow refused = glance_row_from_json(glance_row_json(refused_row("cudnn", "s", "needs a GPU")));
  ASSERT_TRUE(refused.refusal);
  EXPECT_EQ(*refused.refusal, "needs a GPU");
  EXPECT_THROW(glance_row_from_json(nlohmann::json::object()), Error);
}

TEST(Glance, NanOutputIsNullErrorInJsonAndAnInsight) {
  RunResult r = naive_result();
  r.trace.reset();
  r.nan_output = true;
  r.rel_err = std::numeric_limits<double>::quiet_NaN();
  GlanceRow row = glance_row(r, 807.0);
  ASSERT_EQ(row.insights.size(), 1u);
  EXPECT_EQ(row.insights[0].code, "nan_output");
  nlohmann::json j = glance_row_json(row);
  EXPECT_TRUE(j["rel_err"].is_null());
  EXPECT_EQ(j["nan_output"], true);
  EXPECT_NO_THROW((void)j.dump());
}

// --causal-align bottom-right with Sq > Sk: naive's NaN sit only in the rows that see no key. The
// row keeps the error over the defined rows (text and JSON) and nan_output says why, by the numbers.
TEST(Glance, NanOnlyInFullyMaskedRowsKeepsTheErrorAndExplainsIt) {
  RunResult r = naive_result();
  r.trace.reset();
  r.spec.batch = 1;
  r.spec.heads = r.spec.kv_heads = 2;
  r.spec.seq_q = 256;
  r.spec.seq_k = 64;
  r.spec.causal_align = CausalAlign::bottom_right;
  r.nan_output = true;
  r.nan_only_in_masked_rows = true;
  r.masked_rows = r.masked_rows_nan = 384;
  r.rel_err = 3.1e-3;
  GlanceRow row = glance_row(r, 807.0);
  ASSERT_EQ(row.insights.size(), 1u);
  EXPECT_EQ(row.insights[0].code, "nan_output");
  const std::string& why = row.insights[0].text;
  EXPECT_NE(why.find("384 of 384 fully masked rows are NaN"), std::string::npos) << why;
  EXPECT_NE(why.find("the first 192 query rows of each head see no key (bottom-right, seq 256 > seq-k 64)"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("PyTorch's naive module"), std::string::npos) << why;
  nlohmann::json j = glance_row_json(row);
  EXPECT_DOUBLE_EQ(j["rel_err"].get<double>(), 3.1e-3);
  EXPECT_EQ(j["nan_only_in_masked_rows"], true);
  EXPECT_EQ(j["fully_masked_rows_nan"], 384);
  const GlanceRow back = glance_row_from_json(j);
  EXPECT_TRUE(back.nan_only_in_masked_rows);
  EXPECT_EQ(back.masked_rows, 384);
  const std::string text = glance_text({row}, 120);
  EXPECT_NE(text.find("3.1e-03"), std::string::npos) << text;
  EXPECT_EQ(text.find(" nan "), std::string::npos) << text;

  // NaN in a row that sees a key is still an undefined error.
  r.nan_only_in_masked_rows = false;
  r.rel_err = std::numeric_limits<double>::quiet_NaN();
  row = glance_row(r, 807.0);
  EXPECT_TRUE(glance_row_json(row)["rel_err"].is_null());
  EXPECT_NE(row.insights[0].text.find("undefined"), std::string::npos);
  EXPECT_NE(glance_text({row}, 120).find(" nan "), std::string::npos);
}

TEST(Glance, TextFitsInWidthAndWrapsTheInsights) {
  std::string text = glance_text({glance_row(naive_result(), 807.0), refused_row("cudnn", "cuDNN SDPA", "needs a GPU")}, 120);
  std::istringstream lines(text);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    EXPECT_LE(display_width(line), 120u) << line;
    ++count;
  }
  EXPECT_GT(count, 8);  // the insights wrapped onto several lines
  EXPECT_NE(text.find("naive"), std::string::npos);
  EXPECT_NE(text.find("1.123"), std::string::npos);
  EXPECT_NE(text.find("528.0 MiB"), std::string::npos);
  EXPECT_NE(text.find("15.3"), std::string::npos);
  EXPECT_NE(text.find("1.9%"), std::string::npos);
  EXPECT_NE(text.find("3.6e-03"), std::string::npos);
  EXPECT_NE(text.find("\u25b8 [naive] hidden_copy:"), std::string::npos);
  EXPECT_NE(text.find("refused: needs a GPU"), std::string::npos);
}

TEST(WrapText, BreaksAtSpacesAndCutsLongWords) {
  EXPECT_EQ(wrap_text("aa bb cc", 5), (std::vector<std::string>{"aa bb", "cc"}));
  EXPECT_EQ(wrap_text("abcdefgh", 3), (std::vector<std::string>{"abc", "def", "gh"}));
  EXPECT_EQ(wrap_text("\u2192\u2192 x", 4), (std::vector<std::string>{"\u2192\u2192 x"}));  // 4 code points
  EXPECT_EQ(wrap_text("\u2192\u2192 x", 3), (std::vector<std::string>{"\u2192\u2192", "x"}));
  EXPECT_EQ(display_width("\u2192 12.5%"), 7u);
}

// The header names the forwards a median is of: one count when every row kept the same number,
// the fewest and the most when --min-time kept fast variants more times.
TEST(TableHeader, NamesTheForwardCountsOfTheRows) {
  RunResult r;
  r.spec.batch = 1;
  r.spec.heads = r.spec.kv_heads = 4;
  r.spec.seq_q = r.spec.seq_k = 512;
  r.spec.head_dim = 64;
  r.spec.dtype = DType::fp32;
  r.threads = 2;
  const std::string same = table_header(r, "AMD EPYC", {10, 10});
  EXPECT_EQ(same, "1\u00d74\u00d7512\u00d764 (B\u00d7H\u00d7S\u00d7D) fp32 bhsd causal \u00b7 device: cpu, AMD EPYC \u00b7 "
                  "2 threads \u00b7 median of 10 forwards");
  const std::string differ = table_header(r, "AMD EPYC", {267, 1000});
  EXPECT_NE(differ.find("\u00b7 medians of 267\u20131000 forwards"), std::string::npos) << differ;
}

}  // namespace
}  // namespace attnprof::report
