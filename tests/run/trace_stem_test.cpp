// trace_stem: hand-written names for known configurations, and a different name for every field
// that makes two runs differ.
#include "run/trace_stem.h"

#include <attnprof/compare.h>

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

using namespace attnprof;

namespace {

RunOptions defaults_of_the_cli() {
  RunOptions o;
  o.spec.batch = 1;
  o.spec.heads = 16;
  o.spec.kv_heads = 16;
  o.spec.seq_q = o.spec.seq_k = 512;
  o.spec.head_dim = 64;
  o.variant = "flash";
  return o;
}

TEST(TraceStem, HandWrittenNames) {
  RunOptions o = defaults_of_the_cli();
  EXPECT_EQ(trace_stem(o), "1_16_512_64_flash_cpu");

  o.spec.dtype = DType::fp32;
  EXPECT_EQ(trace_stem(o), "1_16_512_64_flash_cpu_fp32");

  o = defaults_of_the_cli();
  o.spec.device = Device::cuda;
  o.spec.batch = 8;
  o.spec.seq_q = 1024;
  o.spec.seq_k = 384;
  o.spec.causal_align = CausalAlign::bottom_right;
  o.spec.kv_heads = 4;
  o.spec.layout = Layout::bshd;
  o.spec.dtype = DType::fp16;
  o.variant = "naive";
  EXPECT_EQ(trace_stem(o), "8_16_1024_64_naive_cuda_fp16_causal-bottom-right_bshd_kv4_sk384");

  o = defaults_of_the_cli();
  o.spec.causal = false;
  o.threads = 2;
  o.seed = 7;
  o.schedule.active = 5;
  EXPECT_EQ(trace_stem(o), "1_16_512_64_flash_cpu_nocausal_t2_seed7_sched1-1-5");

  o = defaults_of_the_cli();
  o.kernels.flash_schedule = "sm90-tile-counter";
  o.kernels.cudnn_engine = 2;
  o.kernels.cpu_isa = "portable";
  EXPECT_EQ(trace_stem(o), "1_16_512_64_flash_cpu_sm90-tile-counter_engine2_isa-portable");
  o.kernels.deterministic = true;
  EXPECT_EQ(trace_stem(o), "1_16_512_64_flash_cpu_sm90-tile-counter_engine2_deterministic_isa-portable");

  o = defaults_of_the_cli();
  o.variant = "my variant/2%";
  EXPECT_EQ(trace_stem(o), "1_16_512_64_my%20variant%2F2%25_cpu");
}

TEST(TraceStem, EveryFieldThatMakesRunsDifferChangesTheName) {
  const RunOptions base = defaults_of_the_cli();
  const std::vector<std::pair<const char*, std::function<void(RunOptions&)>>> changes = {
      {"batch", [](RunOptions& o) { o.spec.batch = 2; }},
      {"heads", [](RunOptions& o) { o.spec.heads = o.spec.kv_heads = 8; }},
      {"seq", [](RunOptions& o) { o.spec.seq_q = o.spec.seq_k = 1024; }},
      {"head_dim", [](RunOptions& o) { o.spec.head_dim = 128; }},
      {"variant", [](RunOptions& o) { o.variant = "naive"; }},
      {"device", [](RunOptions& o) { o.spec.device = Device::cuda; }},
      {"dtype fp32", [](RunOptions& o) { o.spec.dtype = DType::fp32; }},
      {"dtype fp16", [](RunOptions& o) { o.spec.dtype = DType::fp16; }},
      {"no causal", [](RunOptions& o) { o.spec.causal = false; }},
      {"causal align", [](RunOptions& o) { o.spec.causal_align = CausalAlign::bottom_right; }},
      {"layout", [](RunOptions& o) { o.spec.layout = Layout::bshd; }},
      {"kv heads", [](RunOptions& o) { o.spec.kv_heads = 4; }},
      {"seq k", [](RunOptions& o) { o.spec.seq_k = 256; }},
      {"threads", [](RunOptions& o) { o.threads = 1; }},
      {"seed", [](RunOptions& o) { o.seed = 3; }},
      {"wait", [](RunOptions& o) { o.schedule.wait = 0; }},
      {"warmup", [](RunOptions& o) { o.schedule.warmup = 2; }},
      {"active", [](RunOptions& o) { o.schedule.active = 4; }},
      {"min time", [](RunOptions& o) { o.min_time_s = 0.5; }},
      {"min time 0", [](RunOptions& o) { o.min_time_s = 0; }},
      {"flash schedule", [](RunOptions& o) { o.kernels.flash_schedule = "sm80"; }},
      {"cudnn engine", [](RunOptions& o) { o.kernels.cudnn_engine = 1; }},
      {"cpu isa", [](RunOptions& o) { o.kernels.cpu_isa = "avx512"; }},
  };
  std::set<std::string> names{trace_stem(base)};
  for (const auto& [what, change] : changes) {
    RunOptions o = base;
    change(o);
    EXPECT_NE(trace_stem(o), trace_stem(base)) << what;
    EXPECT_TRUE(names.insert(trace_stem(o)).second) << what << " gives a name another change gave: " << trace_stem(o);
  }
  // Fields in combination stay apart too: kv heads 4 with seq-k 256 is neither alone.
  RunOptions both = base;
  both.spec.kv_heads = 4;
  both.spec.seq_k = 256;
  EXPECT_TRUE(names.insert(trace_stem(both)).second) << trace_stem(both);
}

// A variant whose name ends like a device and a token cannot take another configuration's name.
TEST(TraceStem, VariantNamesCannotImitateTokens) {
  RunOptions fp32_flash = defaults_of_the_cli();
  fp32_flash.spec.dtype = DType::fp32;
  RunOptions odd = defaults_of_the_cli();
  odd.variant = "flash_cpu_fp32";
  EXPECT_EQ(trace_stem(fp32_flash), "1_16_512_64_flash_cpu_fp32");
  EXPECT_EQ(trace_stem(odd), "1_16_512_64_flash_cpu_fp32_cpu");
  EXPECT_NE(trace_stem(fp32_flash), trace_stem(odd));
}

}  // namespace

namespace {

// compare's and sweep's results: hand-written names, a token for each list, a hash for a long one.
TEST(ResultsStem, CompareAndSweepHandWrittenNames) {
  RunOptions o = defaults_of_the_cli();
  o.rounds = compare_rounds(o.spec.device);
  EXPECT_EQ(compare_stem(o, {}), "compare_1_16_512_64_cpu");
  // The default is the device's: 15 rounds on the CPU, 5 on CUDA; another count is named.
  o.rounds = 5;
  EXPECT_EQ(compare_stem(o, {}), "compare_1_16_512_64_cpu_r5");
  o.spec.device = Device::cuda;
  EXPECT_EQ(compare_stem(o, {}), "compare_1_16_512_64_cuda");
  o.rounds = 15;
  EXPECT_EQ(compare_stem(o, {}), "compare_1_16_512_64_cuda_r15");
  o.spec.device = Device::cpu;
  o.spec.dtype = DType::fp32;
  o.threads = 1;
  o.rounds = 3;
  EXPECT_EQ(compare_stem(o, {"naive", "flash"}), "compare_1_16_512_64_cpu_fp32_t1_r3_vnaive+flash");
  EXPECT_EQ(compare_stem(o, {"a+b"}), "compare_1_16_512_64_cpu_fp32_t1_r3_va%2Bb");  // not the list a, b

  RunOptions s = defaults_of_the_cli();
  EXPECT_EQ(sweep_stem(s, {512, 1024}, {64}, {}), "sweep_1_16_cpu_s512+1024_d64");
  s.profile = false;
  s.spec.causal = false;
  EXPECT_EQ(sweep_stem(s, {64}, {32, 128}, {"inplace"}), "sweep_1_16_cpu_nocausal_noprofile_s64_d32+128_vinplace");
  // A variant named like the --no-profile token takes no other configuration's name.
  RunOptions profiled = defaults_of_the_cli();
  EXPECT_NE(sweep_stem(profiled, {64}, {64}, {"x_noprofile"}), sweep_stem(s, {64}, {64}, {"x"}));

  // 12 doublings from 512 spelled out are 70 characters: the token is a hash, '=' and 16 digits.
  std::vector<std::int64_t> long_list;
  for (std::int64_t v = 512; long_list.size() < 12; v *= 2) long_list.push_back(v);
  const std::string hashed = sweep_stem(defaults_of_the_cli(), long_list, {64}, {});
  EXPECT_EQ(hashed.size(), std::string("sweep_1_16_cpu_s=").size() + 16 + std::string("_d64").size()) << hashed;
  EXPECT_EQ(hashed.rfind("sweep_1_16_cpu_s=", 0), 0u) << hashed;
  long_list.back() += 1;  // another list: another hash
  EXPECT_NE(sweep_stem(defaults_of_the_cli(), long_list, {64}, {}), hashed);
}

}  // namespace
