#include "report/insights.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "report_insights/scenarios.h"

namespace attnprof::report {
namespace {

using testing::GpuMathOptions;
using testing::TraceBuilder;

bool has(const std::vector<Insight>& insights, const std::string& code) {
  return std::any_of(insights.begin(), insights.end(), [&](const Insight& i) { return i.code == code; });
}
const Insight& get(const std::vector<Insight>& insights, const std::string& code) {
  auto it = std::find_if(insights.begin(), insights.end(), [&](const Insight& i) { return i.code == code; });
  EXPECT_NE(it, insights.end()) << code;
  return *it;
}

template <typename Forward, typename... Options>
trace::Trace three_forwards(Forward forward, Options... options) {
  TraceBuilder b;
  b.add_h200();
  for (int i = 0; i < 3; ++i) forward(b, 100000 * i, options...);
  return b.trace;
}

AttentionSpec blog_spec(Device device) {
  AttentionSpec spec;  // 8 x 16 x 1024 x 64, bf16, causal
  spec.device = device;
  return spec;
}

TEST(ForwardWork, AttributesAsyncGpuWorkThroughCorrelation) {
  trace::Trace t = three_forwards(testing::gpu_naive_forward, testing::GpuNaiveOptions{});
  TraceWork work = collect_forwards(t);
  ASSERT_EQ(work.forwards.size(), 3u);
  EXPECT_TRUE(work.gpu);
  EXPECT_EQ(work.unattributed, 0);
  const Forward& f = work.forwards[1];
  // bmm, mul, masked_fill, softmax, bmm + one memcpy + one memset, in launch order.
  EXPECT_EQ(f.kernels(), 5);
  EXPECT_EQ(f.count(KernelClass::memcpy), 1);
  EXPECT_EQ(f.count(KernelClass::memset), 1);
  std::vector<KernelClass> kinds;
  for (const auto& w : f.work) kinds.push_back(w.kind);
  EXPECT_EQ(kinds, (std::vector<KernelClass>{KernelClass::memset, KernelClass::gemm, KernelClass::elementwise,
                                             KernelClass::memcpy, KernelClass::mask, KernelClass::softmax,
                                             KernelClass::gemm}));
  EXPECT_EQ(f.work[3].op_path(), "aten::masked_fill \u203a aten::clone \u203a aten::copy_");
  EXPECT_EQ(f.work_ns, 1 + 85 + 128 + 127 + 367 + 284 + 84);
  EXPECT_DOUBLE_EQ(work.kernels_per_forward(), 5.0);
}

TEST(ForwardWork, WholeTraceIsOneForwardWithoutRanges) {
  TraceBuilder b;
  b.op("aten::mul", 0, 100);
  b.cpu_kernel("mul", 10, 50);
  b.op("aten::add", 200, 100);
  b.cpu_kernel("add", 210, 50);
  TraceWork work = collect_forwards(b.trace);
  ASSERT_EQ(work.forwards.size(), 1u);
  EXPECT_EQ(work.forwards[0].kernels(), 2);
  EXPECT_EQ(work.forwards[0].cpu_ns, 300);
}

// hidden_copy
TEST(HiddenCopy, FiresOnOutOfPlaceMaskedFillOnTheGpu) {
  auto insights = derive_insights(three_forwards(testing::gpu_naive_forward, testing::GpuNaiveOptions{}), {});
  ASSERT_TRUE(has(insights, "hidden_copy"));
  const std::string& text = get(insights, "hidden_copy").text;
  EXPECT_NE(text.find("aten::masked_fill is out of place"), std::string::npos) << text;
  EXPECT_NE(text.find("256.0 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("127 ns per forward"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::masked_fill_ would not"), std::string::npos) << text;
}

TEST(HiddenCopy, SilentForInPlaceMaskedFill) {
  auto insights = derive_insights(three_forwards(testing::gpu_naive_forward, testing::GpuNaiveOptions{false, true}), {});
  EXPECT_FALSE(has(insights, "hidden_copy"));
}

TEST(HiddenCopy, SilentForExplicitConversionsInsideAComposite) {
  auto insights = derive_insights(three_forwards(testing::gpu_math_forward, testing::GpuMathOptions{}), {});
  EXPECT_FALSE(has(insights, "hidden_copy"));
}

TEST(HiddenCopy, FiresOnCpuKernelsOfOutOfPlaceOp) {
  auto insights = derive_insights(three_forwards(testing::cpu_naive_forward, true), {});
  ASSERT_TRUE(has(insights, "hidden_copy"));
  EXPECT_NE(get(insights, "hidden_copy").text.find("a copy kernel, 60 ns per forward"), std::string::npos)
      << get(insights, "hidden_copy").text;
  EXPECT_FALSE(has(derive_insights(three_forwards(testing::cpu_naive_forward, false), {}), "hidden_copy"));
  EXPECT_FALSE(has(derive_insights(three_forwards(testing::cpu_math_forward, true), {}), "hidden_copy"));
}

// Two forwards, each a reshape that copies with 3 launches of 2 distinct copy kernels
// (40 + 40 + 20 ns) and a DtoD memcpy twice (2 × 10 ns): 3 launches, 100 ns, 2 memcpys per forward.
TEST(HiddenCopy, CountsLaunchesAndDistinctCopyKernels) {
  TraceBuilder b;
  for (std::int64_t t : {0, 1000}) {
    b.forward(t, 500);
    b.op("aten::reshape", t + 10, 400);
    b.op("aten::clone", t + 20, 300);
    b.kernel("direct_copy_kernel_a", t + 30, t + 600, 40);
    b.kernel("direct_copy_kernel_a", t + 40, t + 650, 40);
    b.kernel("direct_copy_kernel_b", t + 50, t + 700, 20);
    b.op("aten::masked_fill", t + 450, 40);
    b.op("aten::copy_", t + 455, 20);
    b.gpu(trace::Category::gpu_memcpy, "Memcpy DtoD (Device -> Device)", t + 456, t + 750, 10, "cudaMemcpyAsync");
    b.gpu(trace::Category::gpu_memcpy, "Memcpy DtoD (Device -> Device)", t + 457, t + 770, 10, "cudaMemcpyAsync");
    b.kernel("masked_fill_kernel", t + 480, t + 790, 5);
  }
  auto insights = derive_insights(b.trace, {});
  ASSERT_TRUE(has(insights, "hidden_copy"));
  const std::string& text = get(insights, "hidden_copy").text;
  EXPECT_NE(text.find("aten::reshape could not return a view and copied (3 launches of 2 copy kernels, 100 ns per "
                      "forward"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("(2 Memcpy DtoD, 20 ns per forward"), std::string::npos) << text;
}

TEST(HiddenCopy, FiresOnABareDeviceToDeviceCopy) {
  TraceBuilder b;
  b.forward(0, 100);
  b.op("aten::copy_", 10, 50);
  b.gpu(trace::Category::gpu_memcpy, "Memcpy DtoD (Device -> Device)", 20, 500, 40, "cudaMemcpyAsync").bytes = 4096;
  auto insights = derive_insights(b.trace, {});
  ASSERT_TRUE(has(insights, "hidden_copy"));
  EXPECT_NE(get(insights, "hidden_copy").text.find("device-to-device copy inside the forward"), std::string::npos);
}

// fp32_gemm_cuda_cores
TEST(Fp32Gemm, FiresOnFfmaGemms) {
  auto insights = derive_insights(three_forwards(testing::gpu_math_forward, testing::GpuMathOptions{}), {});
  ASSERT_TRUE(has(insights, "fp32_gemm_cuda_cores"));
  const std::string& text = get(insights, "fp32_gemm_cuda_cores").text;
  EXPECT_NE(text.find("2 of 2 GEMM kernels"), std::string::npos) << text;
  EXPECT_NE(text.find("sm80_xmma_gemm_f32f32"), std::string::npos) << text;
  EXPECT_NE(text.find("955 ns per forward"), std::string::npos) << text;  // 538 + 417
}

TEST(Fp32Gemm, SilentForTensorCoreGemmsAndOnTheCpu) {
  EXPECT_FALSE(has(derive_insights(three_forwards(testing::gpu_naive_forward, testing::GpuNaiveOptions{}), {}),
                   "fp32_gemm_cuda_cores"));
  EXPECT_TRUE(has(derive_insights(three_forwards(testing::gpu_naive_forward, testing::GpuNaiveOptions{true, false}), {}),
                  "fp32_gemm_cuda_cores"));
  // A CPU "gemm" kernel is not a CUDA-core GEMM.
  EXPECT_FALSE(has(derive_insights(three_forwards(testing::cpu_math_forward, true), {}), "fp32_gemm_cuda_cores"));
}

TEST(Fp32Gemm, TensorCoreSignatures) {
  EXPECT_TRUE(gemm_uses_tensor_cores(testing::kNvjetNT));
  EXPECT_TRUE(gemm_uses_tensor_cores("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_wgmma"));
  EXPECT_TRUE(gemm_uses_tensor_cores("ampere_h16816gemm_128x128_ldg8_stages_32x5_tn"));
  EXPECT_TRUE(gemm_uses_tensor_cores("sm90_gemm_HGMMA_64x128"));
  EXPECT_FALSE(gemm_uses_tensor_cores(testing::kFfmaNT));
  EXPECT_FALSE(gemm_uses_tensor_cores("ampere_sgemm_128x64_nn"));
  // "ffma" wins over a dtype that looks like a tensor-core one.
  EXPECT_FALSE(gemm_uses_tensor_cores("gemm_bf16_ffma_kernel"));
}

// mask_rebuilt
TEST(MaskRebuilt, FiresWhenEveryForwardBuildsTheMask) {
  auto insights = derive_insights(three_forwards(testing::gpu_math_forward, testing::GpuMathOptions{}), {});
  ASSERT_TRUE(has(insights, "mask_rebuilt"));
  const std::string& text = get(insights, "mask_rebuilt").text;
  EXPECT_NE(text.find("aten::ones, aten::tril: 2 kernels, 11 ns per forward"), std::string::npos) << text;
  auto cpu = derive_insights(three_forwards(testing::cpu_math_forward, true), {});
  ASSERT_TRUE(has(cpu, "mask_rebuilt"));
  EXPECT_NE(get(cpu, "mask_rebuilt").text.find("aten::ones, aten::tril, aten::logical_not: 3 kernels"), std::string::npos)
      << get(cpu, "mask_rebuilt").text;
}

TEST(MaskRebuilt, SilentWhenTheMaskIsBuiltOnceOutside) {
  GpuMathOptions cached;
  cached.rebuild_mask = false;
  EXPECT_FALSE(has(derive_insights(three_forwards(testing::gpu_math_forward, cached), {}), "mask_rebuilt"));
  // naive applies a mask (masked_fill) but does not build one.
  EXPECT_FALSE(has(derive_insights(three_forwards(testing::gpu_naive_forward, testing::GpuNaiveOptions{}), {}),
                   "mask_rebuilt"));
  // Built in the first forward only (a cache filled on first use): not every forward.
  TraceBuilder b;
  testing::cpu_math_forward(b, 0, true);
  testing::cpu_math_forward(b, 100000, false);
  EXPECT_FALSE(has(derive_insights(b.trace, {}), "mask_rebuilt"));
}

// safe_softmax
TEST(SafeSoftmax, FiresOnTheGuardKernelsAfterTheSoftmax) {
  auto insights = derive_insights(three_forwards(testing::gpu_math_forward, testing::GpuMathOptions{}), {});
  ASSERT_TRUE(has(insights, "safe_softmax"));
  const std::string& text = get(insights, "safe_softmax").text;
  EXPECT_NE(text.find("3 extra kernels per forward"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::isneginf, aten::all, aten::where"), std::string::npos) << text;
  EXPECT_NE(text.find("393 ns per forward"), std::string::npos) << text;  // 157 + 96 + 140
  EXPECT_TRUE(has(derive_insights(three_forwards(testing::cpu_math_forward, true), {}), "safe_softmax"));
}

TEST(SafeSoftmax, SilentForAPlainSoftmax) {
  GpuMathOptions plain;
  plain.safe_softmax = false;
  // The mask's where comes before the softmax: it is not a guard.
  EXPECT_FALSE(has(derive_insights(three_forwards(testing::gpu_math_forward, plain), {}), "safe_softmax"));
  EXPECT_FALSE(has(derive_insights(three_forwards(testing::cpu_naive_forward, true), {}), "safe_softmax"));
}

// s2_materialized
TEST(S2Materialized, FiresWhenPeakExtraReachesOneScoreMatrix) {
  RunFacts facts;
  facts.spec = blog_spec(Device::cuda);
  facts.peak_extra_bytes = 528LL << 20;
  auto insight = rules::s2_materialized(TraceWork{}, facts);
  ASSERT_TRUE(insight);
  // 8·16·1024·1024·2 B = 256 MiB
  EXPECT_NE(insight->text.find("8\u00b716\u00b71024\u00b71024\u00b72 B = 256.0 MiB"), std::string::npos) << insight->text;
  EXPECT_NE(insight->text.find("528.0 MiB"), std::string::npos);
  EXPECT_NE(insight->text.find("2.06\u00d7"), std::string::npos) << insight->text;
}

TEST(S2Materialized, SilentForOneKernelPerForward) {
  // A fused kernel's per-thread tiles can exceed one S×S matrix at tiny shapes: not materialised.
  testing::TraceBuilder b;
  testing::cpu_naive_forward(b, 0, true);
  testing::TraceBuilder fused;
  fused.forward(0, 100);
  fused.op("aten::scaled_dot_product_attention", 5, 90);
  fused.cpu_kernel("cpu::flash_attention_bf16_avx512_bf16", 10, 80);
  RunFacts facts;
  facts.spec = blog_spec(Device::cpu);
  facts.spec->batch = 1;
  facts.spec->heads = 1;
  facts.spec->seq_q = facts.spec->seq_k = 256;  // one score matrix: 128 KiB
  facts.peak_extra_bytes = 400 << 10;
  EXPECT_TRUE(rules::s2_materialized(collect_forwards(b.trace), facts));
  EXPECT_FALSE(rules::s2_materialized(collect_forwards(fused.trace), facts));
}

TEST(S2Materialized, SilentBelowOneScoreMatrixOrWithoutFacts) {
  RunFacts facts;
  facts.spec = blog_spec(Device::cuda);
  facts.peak_extra_bytes = (256LL << 20) - 1;
  EXPECT_FALSE(rules::s2_materialized(TraceWork{}, facts));
  facts.peak_extra_bytes = 16LL << 20;
  EXPECT_FALSE(rules::s2_materialized(TraceWork{}, facts));
  facts.peak_extra_bytes.reset();
  EXPECT_FALSE(rules::s2_materialized(TraceWork{}, facts));
}

TEST(S2Materialized, ReadsPeakFromMemoryEvents) {
  TraceBuilder b;
  b.forward(0, 1000);
  auto alloc = [&](std::int64_t ts, std::int64_t bytes, std::int64_t total) {
    trace::Event& e = b.host(trace::Category::cpu_instant_event, "[memory]", ts, 0);
    e.phase = 'i';
    e.bytes = bytes;
    e.total_allocated = total;
  };
  alloc(10, 1 << 20, (3 << 20) + (1 << 20));  // 3 MiB of inputs live before the forward
  alloc(20, 2 << 20, (6 << 20));
  alloc(30, -(1 << 20), (5 << 20));
  RunFacts facts;
  facts.spec = blog_spec(Device::cpu);
  facts.spec->batch = 1;
  facts.spec->heads = 1;  // one score matrix: 1024·1024·2 B = 2 MiB
  TraceWork work = collect_forwards(b.trace);
  EXPECT_EQ(peak_extra_from_memory_events(b.trace, work), 3 << 20);
  EXPECT_TRUE(has(derive_insights(b.trace, facts), "s2_materialized"));
}

// single_fused_kernel
TEST(SingleFusedKernel, FiresOnOneKernelPerForward) {
  auto insights = derive_insights(three_forwards(testing::gpu_flash_forward, 255, 49152), {});
  ASSERT_TRUE(has(insights, "single_fused_kernel"));
  EXPECT_NE(get(insights, "single_fused_kernel").text.find("pytorch_flash::flash_fwd_kernel (94 ns per forward)"),
            std::string::npos)
      << get(insights, "single_fused_kernel").text;
  // cudnn's memset does not count as a kernel.
  auto cudnn = derive_insights(three_forwards(testing::gpu_cudnn_forward, true), {});
  ASSERT_TRUE(has(cudnn, "single_fused_kernel"));
  EXPECT_NE(get(cudnn, "single_fused_kernel").text.find("plus 1 memset"), std::string::npos);
}

TEST(SingleFusedKernel, SilentForSeveralKernels) {
  EXPECT_FALSE(has(derive_insights(three_forwards(testing::gpu_naive_forward, testing::GpuNaiveOptions{}), {}),
                   "single_fused_kernel"));
  TraceBuilder b;
  b.add_h200();
  testing::gpu_flash_forward(b, 0);
  testing::gpu_flash_forward(b, 10000);
  b.op("aten::add", 10005, 2);  // a second kernel in the second forward
  b.kernel(testing::kAddKernel, 10006, 10300, 5);
  EXPECT_FALSE(has(derive_insights(b.trace, {}), "single_fused_kernel"));
}

// low_occupancy_by_design
TEST(LowOccupancy, FiresWithTheRegisterArithmetic) {
  auto insights = derive_insights(three_forwards(testing::gpu_flash_forward, 255, 49152), {});
  ASSERT_TRUE(has(insights, "low_occupancy_by_design"));
  const std::string& text = get(insights, "low_occupancy_by_design").text;
  EXPECT_NE(text.find("255 regs \u00d7 128 threads = 32,640 of 65,536 \u2192 2 blocks \u2192 8 of 64 warps = 12.5%"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("limited by registers"), std::string::npos) << text;
  EXPECT_NE(text.find("the trace records 13%"), std::string::npos) << text;
}

TEST(LowOccupancy, SilentForALeanKernelOrWithoutDeviceProperties) {
  // 64 regs × 128 threads → 8 blocks; 16 KiB + 1 KiB shared → 13 blocks: 32 of 64 warps = 50%.
  EXPECT_FALSE(has(derive_insights(three_forwards(testing::gpu_flash_forward, 64, 16384), {}), "low_occupancy_by_design"));
  TraceBuilder b;  // no deviceProperties
  testing::gpu_flash_forward(b, 0);
  EXPECT_FALSE(has(derive_insights(b.trace, {}), "low_occupancy_by_design"));
}

TEST(LowOccupancy, ByDesignOnlyForKernelsWhoseDesignIsKnown) {
  // FlashAttention's kernel: its design is known, so the low occupancy is by design, and it is about that kernel.
  auto flash = derive_insights(three_forwards(testing::gpu_flash_forward, 255, 49152), {});
  ASSERT_TRUE(has(flash, "low_occupancy_by_design"));
  EXPECT_FALSE(has(flash, "low_occupancy"));
  EXPECT_EQ(get(flash, "low_occupancy_by_design").about, std::vector<std::string>{testing::kFlashKernel});
  EXPECT_NE(get(flash, "low_occupancy_by_design").text.find("by design: FlashAttention"), std::string::npos);
  // The same footprint on a kernel nobody documented: the same arithmetic, but no design is claimed.
  TraceBuilder b;
  b.add_h200();
  for (std::int64_t t0 : {0, 100000, 200000}) {
    b.forward(t0, 214);
    b.op("aten::custom_op", t0 + 10, 130);
    b.kernel("void my_lib::fused_thing<float>(float*)", t0 + 100, t0 + 150, 94).launch = testing::footprint(255, 128, 49152, 13);
  }
  auto plain = derive_insights(b.trace, {});
  EXPECT_FALSE(has(plain, "low_occupancy_by_design"));
  ASSERT_TRUE(has(plain, "low_occupancy"));
  const Insight& low = get(plain, "low_occupancy");
  EXPECT_NE(low.text.find("my_lib::fused_thing: 255 regs \u00d7 128 threads = 32,640 of 65,536 \u2192 2 blocks"),
            std::string::npos)
      << low.text;
  EXPECT_EQ(low.text.find("design"), std::string::npos) << low.text;
  EXPECT_EQ(low.about, std::vector<std::string>{"void my_lib::fused_thing<float>(float*)"});
  // A lean kernel of unknown design: neither.
  EXPECT_FALSE(has(derive_insights(three_forwards(testing::gpu_flash_forward, 64, 16384), {}), "low_occupancy"));
}

TEST(LowOccupancy, KnownDesigns) {
  EXPECT_TRUE(known_kernel_design(testing::kFlashKernel));
  EXPECT_TRUE(known_kernel_design(testing::kCudnnKernel));
  EXPECT_TRUE(known_kernel_design(testing::kNvjetNT));
  EXPECT_TRUE(known_kernel_design("void attnprof::cuda::attention::attention_forward_kernel<Traits, float>(Params)"));
  EXPECT_TRUE(known_kernel_design("void fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel)"));
  // attnprof's own sm_90a backward is described as itself, not as FlashAttention's forward design
  // (its namespace flash_bwd_sm90 holds "flash_bwd").
  const std::optional<std::string> backward = known_kernel_design(
      "void attnprof::cuda::hopper::flash_bwd_sm90::flash_backward_sm90_kernel<attnprof::cuda::hopper::"
      "flash_bwd_sm90::BwdSm90Traits<128>, __nv_bfloat16>(CUtensorMap_st, CUtensorMap_st, CUtensorMap_st, "
      "CUtensorMap_st, attnprof::cuda::hopper::flash_bwd_sm90::BwdSm90Params)");
  ASSERT_TRUE(backward);
  EXPECT_NE(backward->find("dK and dV accumulators"), std::string::npos) << *backward;
  // GEMMs, convolutions and elementwise kernels of other libraries are not on the list.
  EXPECT_FALSE(known_kernel_design("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma"));
  EXPECT_FALSE(known_kernel_design("void fbgemm_gpu::batched_embedding_forward_kernel<float>(float*)"));
  EXPECT_FALSE(known_kernel_design("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>"));
  EXPECT_FALSE(known_kernel_design("flashlight_conv_kernel"));
}

// Each insight says what it is about: the calls (forward ranges, attention calls) and its kernels.
TEST(InsightsAbout, AttentionRulesNameTheirCallsAndKernels) {
  auto math = derive_insights(three_forwards(testing::gpu_math_forward, testing::GpuMathOptions{}), {});
  for (const char* code : {"mask_rebuilt", "safe_softmax", "fp32_gemm_cuda_cores"}) {
    const Insight& i = get(math, code);
    ASSERT_FALSE(i.about.empty()) << code;
    if (std::string(code) != "fp32_gemm_cuda_cores") EXPECT_EQ(i.about.front(), "attn_fwd") << code;
  }
  for (const std::string& kernel : get(math, "fp32_gemm_cuda_cores").about)
    EXPECT_NE(kernel.find("ffma"), std::string::npos) << kernel;
  auto naive = derive_insights(three_forwards(testing::gpu_naive_forward, testing::GpuNaiveOptions{}), {});
  const Insight& copy = get(naive, "hidden_copy");
  ASSERT_EQ(copy.about.size(), 2u);
  EXPECT_EQ(copy.about[0], "attn_fwd");
  EXPECT_NE(copy.about[1].find("Memcpy DtoD"), std::string::npos) << copy.about[1];
  auto flash = derive_insights(three_forwards(testing::gpu_flash_forward, 255, 49152), {});
  EXPECT_EQ(get(flash, "single_fused_kernel").about, (std::vector<std::string>{"attn_fwd", testing::kFlashKernel}));
  EXPECT_EQ(get(flash, "cpu_bound").about, std::vector<std::string>{"attn_fwd"});
}

TEST(InsightsAbout, TextNamesWhatTheSentenceLeavesOut) {
  std::vector<Insight> insights = {{"cpu_bound", "1 ms of CPU per forward against 1 µs on the GPU", {"attn_fwd"}},
                                   {"single_fused_kernel", "one kernel per forward: k1 (1 µs per forward)", {"k1"}}};
  const std::string text = insights_text(insights);
  EXPECT_NE(text.find("the GPU\n    about: attn_fwd\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("about: k1"), std::string::npos) << text;  // the sentence names k1 already
  EXPECT_EQ(insights_json(insights)[0]["about"], nlohmann::json::array({"attn_fwd"}));
}

// occupancy_recorded_zero
TEST(OccupancyRecordedZero, NamesWhyKinetoWroteZeroNotTheLaunchApi) {
  // cuDNN's kernel with 82,944 B of shared memory, recorded 0%, by cuLaunchKernelEx and by the runtime alike.
  for (bool driver_api : {true, false}) {
    auto insights = derive_insights(three_forwards(testing::gpu_cudnn_forward, driver_api), {});
    ASSERT_TRUE(has(insights, "occupancy_recorded_zero"));
    const std::string& text = get(insights, "occupancy_recorded_zero").text;
    EXPECT_EQ(text.find("driver"), std::string::npos) << text;
    EXPECT_NE(text.find("the trace records 0% est. achieved occupancy for 1 kernel;"), std::string::npos) << text;
    EXPECT_NE(text.find("no block of 82,944 B fits the 49,152 B Kineto's calculator assumes"), std::string::npos)
        << text;
    // 168 regs × 128 threads = 21,504 → 3 blocks; 82,944 + 1,024 B shared → 2 blocks → 8 of 64 warps.
    EXPECT_NE(text.find("estimated 12.5% per SM (2 blocks of 4 warps, limited by shared memory)"), std::string::npos)
        << text;
    EXPECT_EQ(text.find("under one wave"), std::string::npos) << text;  // 1,024 CTAs fill 264 slots
  }
}

TEST(OccupancyRecordedZero, CountsGridsTooSmallForKinetosFigure) {
  // The decode trace's cuDNN kernel: 8 CTAs of 128 threads, 142 registers, 24 KiB shared, recorded 0%.
  TraceBuilder b;
  b.add_h200();
  for (std::int64_t t0 : {0, 10000, 20000}) {
    b.forward(t0, 200);
    b.op("aten::_scaled_dot_product_cudnn_attention", t0 + 10, 150);
    trace::KernelLaunch l = testing::footprint(142, 128, 24576, 0);
    l.grid = {1, 2, 4};
    b.kernel(testing::kCudnnKernel, t0 + 40, t0 + 310, 4).launch = l;
  }
  auto insights = derive_insights(b.trace, {});
  ASSERT_TRUE(has(insights, "occupancy_recorded_zero"));
  const std::string& text = get(insights, "occupancy_recorded_zero").text;
  // min(3, 8/132) × 128 / 2,048 = 0.38%, written as 0.
  EXPECT_NE(text.find("1 kernel whose grid keeps Kineto's figure under 0.5% ("), std::string::npos) << text;
  EXPECT_NE(text.find("8 CTAs / 132 SMs \u00d7 128 threads / 2,048 = 0.38%)"), std::string::npos) << text;
  // The by-design line caps its 18.75% per SM by the grid: 8 of 132 × 3 slots.
  const std::string& design = get(insights, "low_occupancy_by_design").text;
  EXPECT_NE(design.find("= 18.75% (limited by registers; the trace records 0%, Kineto's grid-counting figure "
                        "rounded); its grid of 8 CTAs is under one wave (132 SMs \u00d7 3 blocks = 396 slots): 8/396 "
                        "of 18.75% = 0.38% of the GPU's warps at most"),
            std::string::npos)
      << design;
}

TEST(OccupancyRecordedZero, SilentWhenTheTraceRecordsAFigure) {
  // FlashAttention's kernel, recorded 13%.
  EXPECT_FALSE(has(derive_insights(three_forwards(testing::gpu_flash_forward, 255, 49152), {}),
                   "occupancy_recorded_zero"));
}

// warp_specialized
TEST(WarpSpecialized, ExplainsAHopperAttentionKernelsRegisterBudget) {
  TraceBuilder b;
  b.add_h200();
  for (std::int64_t t0 : {0, 10000, 20000}) {
    b.forward(t0, 200);
    b.op("aten::_scaled_dot_product_flash_attention", t0 + 10, 150);
    // Our sm_90a kernel as CUPTI names it: 1 producer + 3 consumer warpgroups, 88 KiB of shared memory.
    b.kernel("void attnprof::cuda::hopper::(anonymous namespace)::flash_forward_sm90_kernel<attnprof::cuda::hopper::"
             "flash_sm90::FlashSm90Traits<64, 3>, __nv_bfloat16, true>(CUtensorMap_st, CUtensorMap_st)",
             t0 + 40, t0 + 310, 76)
        .launch = testing::footprint(128, 512, 90112 + 1024, 25);
  }
  auto insights = derive_insights(b.trace, {});
  ASSERT_TRUE(has(insights, "warp_specialized"));
  const std::string& text = get(insights, "warp_specialized").text;
  // 512 threads = 4 warpgroups; 128 × 512 = 65,536 of the H200's 65,536 registers → 1 CTA per SM.
  EXPECT_NE(text.find("flash_forward_sm90_kernel: 4 warpgroups of 128 threads"), std::string::npos) << text;
  EXPECT_NE(text.find("and 3 wgmma consumers"), std::string::npos) << text;
  EXPECT_NE(text.find("128 × 512 = 65,536 of 65,536 registers and 1 CTA per SM (89 KiB"), std::string::npos) << text;
}

TEST(WarpSpecialized, SilentForFa2sKernelAndForGemms) {
  // FA2's flash kernel is 128 threads; the blog's naive GEMMs (nvjet sm90, 384 threads) are not attention.
  EXPECT_FALSE(has(derive_insights(three_forwards(testing::gpu_flash_forward, 255, 49152), {}), "warp_specialized"));
  EXPECT_FALSE(has(derive_insights(three_forwards(testing::gpu_naive_forward, testing::GpuNaiveOptions{}), {}),
                   "warp_specialized"));
}

// cpu_bound
TEST(CpuBound, FiresWhenCpuTimePerForwardExceedsDeviceTime) {
  // flash: 214 ns of CPU range against 94 ns of kernel.
  auto insights = derive_insights(three_forwards(testing::gpu_flash_forward, 255, 49152), {});
  ASSERT_TRUE(has(insights, "cpu_bound"));
  EXPECT_NE(get(insights, "cpu_bound").text.find("214 ns of CPU per forward against 94 ns on the GPU (2.3\u00d7)"),
            std::string::npos)
      << get(insights, "cpu_bound").text;
  RunFacts facts;
  facts.spec = blog_spec(Device::cuda);
  facts.cpu_ns_per_forward = 134e3;
  facts.device_ns_per_forward = 98e3;
  auto from_facts = rules::cpu_bound(TraceWork{}, facts);
  ASSERT_TRUE(from_facts);
  EXPECT_NE(from_facts->text.find("134.0 \u00b5s of CPU per forward against 98.0 \u00b5s"), std::string::npos);
}

TEST(CpuBound, SilentWhenTheDeviceIsBusierOrOnTheCpu) {
  EXPECT_FALSE(has(derive_insights(three_forwards(testing::gpu_naive_forward, testing::GpuNaiveOptions{}), {}),
                   "cpu_bound"));  // 1000 ns of CPU, 1076 ns of GPU work
  RunFacts facts;
  facts.spec = blog_spec(Device::cpu);
  facts.cpu_ns_per_forward = 2e6;
  facts.device_ns_per_forward = 1e6;
  EXPECT_FALSE(rules::cpu_bound(TraceWork{}, facts));
  EXPECT_FALSE(has(derive_insights(three_forwards(testing::cpu_naive_forward, true), {}), "cpu_bound"));
}

// nan_output
TEST(NanOutput, FiresOnlyWhenTheRunSawNan) {
  RunFacts facts;
  EXPECT_FALSE(rules::nan_output(facts));
  facts.nan_output = true;
  ASSERT_TRUE(rules::nan_output(facts));
  EXPECT_EQ(rules::nan_output(facts)->code, "nan_output");
}

// The acceptance's expectations, on the synthetic counterparts of the anchors' traces.
TEST(Insights, AnchorShapedTracesGetTheirInsights) {
  auto naive = derive_insights(three_forwards(testing::gpu_naive_forward, testing::GpuNaiveOptions{}), {});
  EXPECT_TRUE(has(naive, "hidden_copy"));
  EXPECT_TRUE(has(naive, "occupancy_recorded_zero"));
  auto math = derive_insights(three_forwards(testing::gpu_math_forward, testing::GpuMathOptions{}), {});
  EXPECT_TRUE(has(math, "fp32_gemm_cuda_cores"));
  EXPECT_TRUE(has(math, "mask_rebuilt"));
  EXPECT_TRUE(has(math, "safe_softmax"));
  EXPECT_FALSE(has(math, "single_fused_kernel"));
  auto flash = derive_insights(three_forwards(testing::gpu_flash_forward, 255, 49152), {});
  EXPECT_TRUE(has(flash, "single_fused_kernel"));
  EXPECT_TRUE(has(flash, "low_occupancy_by_design"));
  EXPECT_FALSE(has(flash, "hidden_copy"));
}

}  // namespace
}  // namespace attnprof::report

namespace attnprof::report {
namespace {

TEST(InsightsOutput, TextWrapsAndJsonKeepsCodes) {
  std::vector<Insight> insights = {{"single_fused_kernel", "one kernel per forward: flash_fwd_kernel, 94 ns per forward"},
                                   {"cpu_bound", "214 ns of CPU per forward against 94 ns on the GPU (2.3\u00d7)"}};
  std::string text = insights_text(insights, 40);
  EXPECT_EQ(text,
            "what the trace revealed:\n"
            "  - single_fused_kernel: one kernel per\n"
            "    forward: flash_fwd_kernel, 94 ns per\n"
            "    forward\n"
            "  - cpu_bound: 214 ns of CPU per forward\n"
            "    against 94 ns on the GPU (2.3\u00d7)\n");
  EXPECT_EQ(insights_text({}), "");
  nlohmann::json j = insights_json(insights);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[1]["code"], "cpu_bound");
}

}  // namespace
}  // namespace attnprof::report

namespace attnprof::report {
namespace {

TEST(SpecFromTrace, ReadsTheShapeOfTheFirstAttentionShapedOp) {
  testing::TraceBuilder b;
  testing::cpu_naive_forward(b, 0, true);
  // matmul(q, k) as attnprof records it: k is [B,H,Sk,D] (transposed inside the GEMM).
  for (auto& e : b.trace.events) {
    if (e.name == "aten::matmul") {
      e.input_dims = "[[2, 4, 128, 64], [2, 2, 256, 64]]";
      e.input_types = "[\"c10::BFloat16\", \"c10::BFloat16\"]";
      break;
    }
  }
  TraceWork work = collect_forwards(b.trace);
  auto spec = spec_from_trace(b.trace, work);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->batch, 2);
  EXPECT_EQ(spec->heads, 4);
  EXPECT_EQ(spec->kv_heads, 2);
  EXPECT_EQ(spec->seq_q, 128);
  EXPECT_EQ(spec->seq_k, 256);
  EXPECT_EQ(spec->head_dim, 64);
  EXPECT_EQ(spec->dtype, DType::bf16);
  // kᵀ as PyTorch's bmm sees it: [B,H,D,Sk].
  for (auto& e : b.trace.events) {
    if (e.name == "aten::matmul") {
      e.input_dims = "[[2, 4, 128, 64], [2, 4, 64, 300]]";
      e.input_types = "[\"float\", \"float\"]";
      break;
    }
  }
  spec = spec_from_trace(b.trace, work);
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->seq_k, 300);
  EXPECT_EQ(spec->dtype, DType::fp32);
}

TEST(SpecFromTrace, NoShapesNoSpec) {
  testing::TraceBuilder b;
  testing::cpu_naive_forward(b, 0, true);
  EXPECT_FALSE(spec_from_trace(b.trace, collect_forwards(b.trace)));
}

}  // namespace
}  // namespace attnprof::report
