// Variants refuse what they cannot run with one line naming the parameter and the allowed values, and
// the registry lists the built-ins in DESIGN.md's order.
#include <attnprof/attention.h>
#include <attnprof/error.h>
#include <attnprof/variant.h>
#include <gtest/gtest.h>

#include <string>

namespace attnprof {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Registry, BuiltinsInOrder) { EXPECT_EQ(variant_names(), "naive|inplace|math|fused|efficient|flash|cudnn"); }

// A row says what runs for its spec: on the CPU no GPU kernels (sm80/sm90); without a mask no
// causal tiles, masks or masked_fill. Each variant that runs the spec is checked.
TEST(Describe, CpuAndNonCausalRowsSayWhatRuns) {
  AttentionSpec causal;
  AttentionSpec plain;
  plain.causal = false;
  for (Variant* v : all_variants()) {
    if (v->refusal(causal)) continue;
    const std::string with_mask = v->describe(causal), without = v->describe(plain);
    for (const char* gpu : {"sm80", "sm90", "wgmma", "mma.sync"}) {
      EXPECT_FALSE(contains(with_mask, gpu)) << v->name() << ": " << with_mask;
      EXPECT_FALSE(contains(without, gpu)) << v->name() << ": " << without;
    }
    for (const char* mask : {"causal", "mask"}) EXPECT_FALSE(contains(without, mask)) << v->name() << ": " << without;
  }
  EXPECT_TRUE(contains(find_variant("flash")->describe(causal), "causal tiles skipped"));
  EXPECT_TRUE(contains(find_variant("naive")->describe(causal), "masked_fill"));
  AttentionSpec gpu;
  gpu.device = Device::cuda;
  EXPECT_TRUE(contains(find_variant("flash")->describe(gpu), "sm90"));  // the words do not depend on a GPU being here
}

// On the GPU a head dim with no kernel of its own says which kernel runs it and whether through a
// padded copy; one with its own kernel, or on the CPU, says nothing of it.
TEST(Describe, FusedGpuRowsNameTheHeadDimPadding) {
  AttentionSpec gpu;
  gpu.device = Device::cuda;
  for (const char* name : {"efficient", "flash"}) {
    gpu.head_dim = 33;
    EXPECT_TRUE(contains(find_variant(name)->describe(gpu),
                         "; head_dim 33 runs on the D 64 kernel through a copy padded to 40 columns"))
        << find_variant(name)->describe(gpu);
    gpu.head_dim = 160;
    EXPECT_TRUE(contains(find_variant(name)->describe(gpu), "; head_dim 160 runs on the D 192 kernel, the columns past 160"))
        << find_variant(name)->describe(gpu);
    gpu.head_dim = 96;
    EXPECT_FALSE(contains(find_variant(name)->describe(gpu), "head_dim")) << find_variant(name)->describe(gpu);
    if (std::string(name) == "efficient")  // the D 96 kernel is the tiling shared with flash
      EXPECT_TRUE(contains(find_variant(name)->describe(gpu), "128×64 tiles")) << find_variant(name)->describe(gpu);
    AttentionSpec cpu = gpu;
    cpu.device = Device::cpu;
    cpu.head_dim = 33;
    EXPECT_FALSE(contains(find_variant(name)->describe(cpu), "head_dim")) << find_variant(name)->describe(cpu);
  }
  AttentionSpec cpu;
  cpu.head_dim = 96;
  EXPECT_TRUE(contains(find_variant("efficient")->describe(cpu), "64×64 tiles")) << find_variant("efficient")->describe(cpu);
  // flash on sm90: head dims up to 32 run on the D 64 wgmma kernel (the sm80 kernels' smallest is
  // D 32); a decode shape may take the split-KV kernels; neither on the CPU.
  gpu.head_dim = 16;
  EXPECT_TRUE(contains(find_variant("flash")->describe(gpu), "; on sm90 the D 64 wgmma kernel"))
      << find_variant("flash")->describe(gpu);
  gpu.head_dim = 128;
  gpu.seq_q = 1;
  gpu.seq_k = 32768;
  EXPECT_TRUE(contains(find_variant("flash")->describe(gpu), "split-KV decode kernel (splits merged by its last CTAs)"))
      << find_variant("flash")->describe(gpu);
  EXPECT_FALSE(contains(find_variant("efficient")->describe(gpu), "split-KV")) << find_variant("efficient")->describe(gpu);
  cpu = gpu;
  cpu.device = Device::cpu;
  EXPECT_FALSE(contains(find_variant("flash")->describe(cpu), "split-KV")) << find_variant("flash")->describe(cpu);
}

TEST(Refusal, CpuVariantsTakeTheBlogShape) {
  AttentionSpec spec;  // the defaults: 8, 16, 1024, 64, bf16, causal, cpu
  for (const char* name : {"naive", "inplace", "math", "fused", "efficient", "flash"}) {
    EXPECT_FALSE(find_variant(name)->refusal(spec).has_value()) << name;
  }
}

TEST(Refusal, CudnnNeedsCudaAndSaysWhatTheCpuHas) {
  AttentionSpec spec;
  const auto why = find_variant("cudnn")->refusal(spec);
#if !ATTNPROF_HAVE_CUDA
  ASSERT_TRUE(why.has_value());
  EXPECT_TRUE(contains(*why, "device cuda")) << *why;
  EXPECT_TRUE(contains(*why, "cuDNN")) << *why;
  EXPECT_TRUE(contains(*why, "naive, inplace, math, fused, efficient, flash")) << *why;
  Tensor none;
  EXPECT_THROW(find_variant("cudnn")->forward(spec, none, none, none, none), UsageError);
#else
  (void)why;
#endif
}

TEST(Refusal, DtypeNamesTheAllowedValues) {
  AttentionSpec spec;
  spec.dtype = DType::fp64;
  for (const char* name : {"naive", "math", "flash"}) {
    const auto why = find_variant(name)->refusal(spec);
    ASSERT_TRUE(why.has_value()) << name;
    EXPECT_TRUE(contains(*why, "dtype fp64")) << *why;
    EXPECT_TRUE(contains(*why, "bf16, fp16, fp32")) << *why;
  }
}

TEST(Refusal, FusedKernelsBoundTheHeadDim) {
  AttentionSpec spec;
  spec.head_dim = 1024;
  for (const char* name : {"flash", "efficient"}) {
    const auto why = find_variant(name)->refusal(spec);
    ASSERT_TRUE(why.has_value()) << name;
    EXPECT_TRUE(contains(*why, "head_dim 1024")) << *why;
    EXPECT_TRUE(contains(*why, "1..512")) << *why;
  }
  EXPECT_FALSE(find_variant("naive")->refusal(spec).has_value());
}

TEST(Refusal, CudaDeviceWithoutBackend) {
#if !ATTNPROF_HAVE_CUDA
  AttentionSpec spec;
  spec.device = Device::cuda;
  const auto why = find_variant("flash")->refusal(spec);
  ASSERT_TRUE(why.has_value());
  EXPECT_TRUE(contains(*why, "device cuda")) << *why;
  EXPECT_TRUE(contains(*why, "allowed: cpu")) << *why;
#endif
}

TEST(Prepare, NaiveWithoutPrepareIsAnError) {
  AttentionSpec spec;
  spec.batch = 1;
  spec.heads = spec.kv_heads = 1;
  spec.seq_q = spec.seq_k = 8;
  spec.head_dim = 16;
  const AttentionInputs in = make_inputs(spec, 1);
  Tensor out = make_output(spec);
  Variant* naive = find_variant("naive");
  spec.seq_q = spec.seq_k = 9;
  naive->prepare(spec);  // prepared for another shape
  spec.seq_q = spec.seq_k = 8;
  EXPECT_THROW(naive->forward(spec, in.q, in.k, in.v, out), Error);
}

}  // namespace
}  // namespace attnprof
