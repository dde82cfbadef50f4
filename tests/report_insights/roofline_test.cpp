#include "report/roofline.h"

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <omp.h>

#include <filesystem>
#include <optional>
#include <string>

#include "cli/cli_runner.h"
#include "ops/backend.h"
#include "report/ceilings_cache.h"
#include "run/ceilings_measure.h"

namespace attnprof::report {
namespace {

AttentionSpec blog() { return AttentionSpec{}; }  // 8 x 16 x 1024 x 64, bf16, causal

Ceilings h200_anchor() {
  Ceilings c;
  c.device = Device::cuda;
  c.device_name = "NVIDIA H200";
  c.matmul_tflops = 807;  // the anchors' bf16 8192³ matmul
  c.copy_gbps = 4219;     // the anchors' device-to-device copy
  return c;
}

TEST(Roofline, FlopsHalveWhenCausal) {
  AttentionSpec s = blog();
  EXPECT_DOUBLE_EQ(attention_flops(s), 17179869184.0);  // 4·8·16·1024²·64 / 2
  s.causal = false;
  EXPECT_DOUBLE_EQ(attention_flops(s), 34359738368.0);
  s.seq_k = 2048;
  EXPECT_DOUBLE_EQ(attention_flops(s), 68719476736.0);
}

TEST(Roofline, BytesOfInputsOutputAndScores) {
  AttentionSpec s = blog();
  EXPECT_DOUBLE_EQ(attention_io_bytes(s), 64.0 * 1024 * 1024);   // q, k, v, out: 16 MiB each in bf16
  EXPECT_DOUBLE_EQ(score_matrix_bytes(s), 256.0 * 1024 * 1024);  // 8·16·1024²·2
  s.kv_heads = 4;  // GQA: k and v shrink four times
  EXPECT_DOUBLE_EQ(attention_io_bytes(s), 40.0 * 1024 * 1024);
  s = blog();
  s.dtype = DType::fp32;
  EXPECT_DOUBLE_EQ(score_matrix_bytes(s), 512.0 * 1024 * 1024);
}

TEST(Roofline, MinimalBytesCountScorePasses) {
  const AttentionSpec s = blog();
  const double io = 64.0 * 1024 * 1024, score = 256.0 * 1024 * 1024;
  EXPECT_DOUBLE_EQ(minimal_bytes(s, 1, 0), io);              // one fused kernel
  EXPECT_DOUBLE_EQ(minimal_bytes(s, 3, 0), io + 4 * score);  // GEMM writes, softmax reads+writes, GEMM reads
  EXPECT_DOUBLE_EQ(minimal_bytes(s, 5, 1), io + 10 * score); // naive: mul, fill, softmax and the copy in between
}

TEST(Roofline, PointUnderTheMeasuredCeilings) {
  // flash at the blog shape: 256 FLOP/byte, right of the 191 FLOP/byte ridge: compute-bound.
  RooflinePoint flash = roofline_point("flash", blog(), 1, 0, 116.7, h200_anchor());
  EXPECT_DOUBLE_EQ(flash.intensity, 256.0);
  EXPECT_FALSE(flash.memory_bound);
  EXPECT_DOUBLE_EQ(flash.roof_tflops, 807.0);
  EXPECT_NEAR(flash.pct_of_roof, 14.461, 1e-3);
  // naive: 17.18e9 / (64 + 2560) MiB = 6.24 FLOP/byte → roof 4219 GB/s × 6.24 = 26.3 TFLOP/s.
  RooflinePoint naive = roofline_point("naive", blog(), 5, 1, 15.3, h200_anchor());
  EXPECT_NEAR(naive.intensity, 17179869184.0 / (2624.0 * 1024 * 1024), 1e-9);
  EXPECT_TRUE(naive.memory_bound);
  EXPECT_NEAR(naive.roof_tflops, 4219e9 * naive.intensity / 1e12, 1e-9);
  EXPECT_NEAR(naive.roof_tflops, 26.34, 0.01);
  EXPECT_DOUBLE_EQ(h200_anchor().ridge_flops_per_byte(), 807e3 / 4219);
}

TEST(Roofline, LowPrecisionRunsMeetTheBf16Ceiling) {
  Ceilings cpu;
  cpu.matmul_tflops = 0.2;       // fp32 sgemm
  cpu.matmul_bf16_tflops = 0.4;  // bf16 matmul
  cpu.copy_gbps = 40;
  EXPECT_DOUBLE_EQ(cpu.peak_tflops(DType::fp32), 0.2);
  EXPECT_DOUBLE_EQ(cpu.peak_tflops(DType::bf16), 0.4);
  EXPECT_DOUBLE_EQ(cpu.peak_tflops(DType::fp16), 0.4);
  // flash at the blog shape: 256 FLOP/byte → 40 GB/s × 256 = 10.24 TFLOP/s, above both matmul roofs.
  EXPECT_DOUBLE_EQ(roofline_point("flash", blog(), 1, 0, 0.1, cpu).roof_tflops, 0.4);
  AttentionSpec fp32 = blog();
  fp32.dtype = DType::fp32;
  EXPECT_DOUBLE_EQ(roofline_point("flash", fp32, 1, 0, 0.1, cpu).roof_tflops, 0.2);
  cpu.matmul_bf16_tflops = 0;  // not measured: the fp32 ceiling for every dtype
  EXPECT_DOUBLE_EQ(cpu.peak_tflops(DType::bf16), 0.2);
}

TEST(Roofline, NoCeilingsNoRoof) {
  RooflinePoint p = roofline_point("flash", blog(), 1, 0, 100, Ceilings{});
  EXPECT_DOUBLE_EQ(p.roof_tflops, 0.0);
  EXPECT_DOUBLE_EQ(p.intensity, 256.0);
  EXPECT_EQ(roofline_json(p)["intensity"], 256.0);
}

Ceilings fake_probe() {
  static int calls = 0;
  ++calls;
  Ceilings c;
  c.device = Device::cuda;
  c.device_name = "probe";
  c.matmul_tflops = 100.0 * calls;
  c.copy_gbps = 1000;
  return c;
}

// A rate above the ceiling's fastest run is flagged, naming the cache and --remeasure; a rate
// above the median but within the runs' spread is noise of the ceiling, not a wrong one.
TEST(Ceilings, AboveCeilingNoteOnlyBeyondTheCeilingsSpread) {
  Ceilings c;
  c.matmul_tflops = 0.5;
  c.matmul_spread = {0.4, 0.6, 5};
  c.matmul_bf16_tflops = 2.0;
  c.matmul_bf16_spread = {1.8, 2.2, 7};
  c.copy_gbps = 10;
  c.cache_path = "/cache/attnprof/ceilings-cpu-X-2t.json";
  c.measured_at = "2026-12-01T14:50:03Z";
  EXPECT_EQ(above_ceiling_note(c, DType::fp32, 0.45), "");   // 90% of the ceiling
  EXPECT_EQ(above_ceiling_note(c, DType::fp32, 0.59), "");   // 118%, still inside 0.4–0.6
  EXPECT_EQ(above_ceiling_note(c, DType::bf16, 0.61), "");   // bf16 is held to the bf16 ceiling 2.0
  const std::string fp32 = above_ceiling_note(c, DType::fp32, 0.61);
  EXPECT_NE(fp32.find("fp32 matmul ceiling 0.50 TFLOP/s"), std::string::npos) << fp32;
  EXPECT_NE(fp32.find("cached in /cache/attnprof/ceilings-cpu-X-2t.json on 2026-12-01T14:50:03Z"), std::string::npos)
      << fp32;
  EXPECT_NE(fp32.find("`attnprof devices --remeasure`"), std::string::npos) << fp32;
  const std::string fp16 = above_ceiling_note(c, DType::fp16, 2.3);
  EXPECT_NE(fp16.find("bf16 matmul ceiling 2.00 TFLOP/s"), std::string::npos) << fp16;
  c.matmul_bf16_tflops = 0;  // no bf16 ceiling: fp16 is held to the fp32 one, as peak_tflops
  EXPECT_NE(above_ceiling_note(c, DType::fp16, 0.61).find("fp32 matmul ceiling"), std::string::npos);
  c.cache_path.clear();
  EXPECT_NE(above_ceiling_note(c, DType::fp32, 0.61).find(", measured on 2026"), std::string::npos);
  EXPECT_EQ(above_ceiling_note(Ceilings{}, DType::fp32, 5.0), "");  // no ceiling measured: no %peak
}

TEST(Ceilings, ProbeRunsOncePerProcess) {
  // an empty cache, so the probe measures (a GPU machine's own cache would answer instead)
  const std::string cache_home = testing::make_temp_dir();
  testing::ScopedEnv xdg("XDG_CACHE_HOME", cache_home.c_str());
  install_ceiling_probe(Device::cuda, fake_probe);
  const Ceilings& first = measured_ceilings(Device::cuda);
  const Ceilings& second = measured_ceilings(Device::cuda);
  // The probe's numbers, under its name, unless this machine's GPU answers with its model, which
  // then names the ceilings (and keys their cache).
  const std::string model = ops::has_backend(Device::cuda) ? ops::backend(Device::cuda).model_name() : std::string();
  EXPECT_EQ(first.device_name, model.empty() ? std::string("probe") : model);
  EXPECT_DOUBLE_EQ(first.matmul_tflops, 100.0);
  EXPECT_DOUBLE_EQ(second.matmul_tflops, 100.0);  // cached, not measured again
  EXPECT_NE(ceilings_text(first).find("ridge at 100.0 FLOP/byte"), std::string::npos) << ceilings_text(first);
  Ceilings back = ceilings_from_json(ceilings_json(first));
  EXPECT_EQ(back.device, Device::cuda);
  EXPECT_DOUBLE_EQ(back.copy_gbps, 1000.0);
}

TEST(Ceilings, CpuMeasurementIsPlausibleAndCached) {
  const std::string cache_home = testing::make_temp_dir();  // an empty cache: measured here, not read
  testing::ScopedEnv xdg("XDG_CACHE_HOME", cache_home.c_str());
  const Ceilings& cpu = measured_ceilings(Device::cpu);
  EXPECT_TRUE(cpu.measured());
  // Any machine that runs the suite does more than 1 GFLOP/s of sgemm and 0.5 GB/s of memcpy,
  // and no CPU reaches 100 TFLOP/s of fp32 or 10 TB/s of memcpy.
  EXPECT_GT(cpu.matmul_tflops, 1e-3);
  EXPECT_LT(cpu.matmul_tflops, 100);
  EXPECT_GT(cpu.matmul_bf16_tflops, 1e-3);
  EXPECT_LT(cpu.matmul_bf16_tflops, 1000);
  EXPECT_GT(cpu.copy_gbps, 0.5);
  EXPECT_LT(cpu.copy_gbps, 10000);
  EXPECT_GE(cpu.seconds_spent, 0.5);  // at least 0.2 s of sgemm, 0.2 s of bf16 matmul and 0.1 s of memcpy
  // Cached: the file holds these very numbers, and asking again gives them back without measuring
  // (a measurement would give other medians and rewrite the file).
  const Ceilings first = cpu;  // a copy: a second measurement would overwrite `cpu` in place
  const std::string written = testing::read_whole_file(cpu.cache_path);
  std::string problem;
  const std::optional<Ceilings> in_file = parse_ceilings_cache(written, Device::cpu, cpu.model, cpu.threads, problem);
  ASSERT_TRUE(in_file) << cpu.cache_path << ": " << problem;
  const Ceilings& again = measured_ceilings(Device::cpu);
  EXPECT_EQ(&again, &cpu);
  EXPECT_EQ(testing::read_whole_file(cpu.cache_path), written) << "asking again rewrote the cache";
  for (const Ceilings* c : {&*in_file, &again}) {
    EXPECT_EQ(c->matmul_tflops, first.matmul_tflops);
    EXPECT_EQ(c->matmul_bf16_tflops, first.matmul_bf16_tflops);
    EXPECT_EQ(c->copy_gbps, first.copy_gbps);
    EXPECT_EQ(c->matmul_spread.max, first.matmul_spread.max);
    EXPECT_EQ(c->measured_at, first.measured_at);
  }
  EXPECT_EQ(again.seconds_spent, first.seconds_spent);
  std::printf("measured: %s\n", ceilings_text(cpu).c_str());
  // Each ceiling is the median of at least 5 runs, within their range.
  for (const auto& [median, spread] : {std::pair{cpu.matmul_tflops, cpu.matmul_spread},
                                       std::pair{cpu.matmul_bf16_tflops, cpu.matmul_bf16_spread},
                                       std::pair{cpu.copy_gbps, cpu.copy_spread}}) {
    EXPECT_GE(spread.samples, 5);
    EXPECT_LE(spread.min, median);
    EXPECT_GE(spread.max, median);
  }
  // The label states the threads the measurement ran with.
  EXPECT_EQ(cpu.threads, omp_get_max_threads());
  EXPECT_NE(cpu.device_name.find(fmt::format("({} thread", cpu.threads)), std::string::npos) << cpu.device_name;
  EXPECT_EQ(cpu.cache_path.rfind(cache_home + "/attnprof/ceilings-cpu-", 0), 0u) << cpu.cache_path;
  std::filesystem::remove_all(cache_home);
}

}  // namespace
}  // namespace attnprof::report

namespace attnprof::report {
namespace {

// The backend path that measures a GPU's ceilings, run on the CPU backend (same seam, small sizes).
TEST(Ceilings, ThroughABackendWithItsChecks) {
  Ceilings c = measure_backend_ceilings(Device::cpu, 256, 8 << 20);
  EXPECT_GT(c.matmul_bf16_tflops, 1e-4);
  EXPECT_GT(c.matmul_tflops, 1e-4);
  EXPECT_GT(c.copy_gbps, 0.1);
  EXPECT_NE(c.matmul_bf16_what.find("bf16 GEMM 256\u00b3"), std::string::npos) << c.matmul_bf16_what;
  EXPECT_NE(c.matmul_what.find("fp32 GEMM 128\u00b3"), std::string::npos) << c.matmul_what;
  EXPECT_NE(c.copy_what.find("device copy of 8.0 MiB"), std::string::npos) << c.copy_what;
  EXPECT_GE(c.seconds_spent, 0.5);
}

}  // namespace
}  // namespace attnprof::report
