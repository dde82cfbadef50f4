// The backward's insights (src/report/backward_insights.cpp): probabilities_kept, scores_recomputed
// and dkdv_reduction fire on hand-built attn_bwd traces with the numbers worked out by hand from the
// shape, on the recorded model traces where their attention backward does what the rule says
// (naive's SoftmaxBackward0, cuDNN's SDPA backward), and nowhere else: not on forward-only traces,
// not on the other model's backward, not without GQA. model_trace_insights_test.cpp adds the public
// traces of other models; backward_insights_cli_test.cpp real CPU runs through the binary.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "report/backward_insights.h"
#include "report/insights.h"
#include "report_insights/insight_test_util.h"
#include "report_insights/synthetic_trace.h"
#include "trace/reader.h"

namespace attnprof::report {
namespace {

bool has(const Insight* insight, const std::string& part) {
  return insight != nullptr && insight->text.find(part) != std::string::npos;
}

// B 2, H 8 (kv_heads as given), Sq 128, Sk 256, D 64, bf16, causal top-left, on the GPU.
AttentionSpec spec(std::int64_t kv_heads) {
  AttentionSpec s;
  s.batch = 2;
  s.heads = 8;
  s.kv_heads = kv_heads;
  s.seq_q = 128;
  s.seq_k = 256;
  s.head_dim = 64;
  s.dtype = DType::bf16;
  s.causal = true;
  s.device = Device::cuda;
  return s;
}

RunFacts facts_of(const AttentionSpec& s) {
  RunFacts f;
  f.spec = s;
  return f;
}

// Two steps, each a forward (attn_fwd: one GEMM) then a backward (attn_bwd) that `backward` fills
// from the step's start time.
template <class Fill>
trace::Trace two_steps(Fill backward) {
  testing::TraceBuilder b;
  for (std::int64_t t0 : {0, 1000000}) {
    b.forward(t0, 100000);
    b.op("aten::bmm", t0 + 10, 500);
    b.kernel("nvjet_sm90_tst_128x128_64x6_2x1_v_bz_TNT", t0 + 20, t0 + 1000, 30000);
    b.host(trace::Category::user_annotation, "attn_bwd", t0 + 200000, 300000);
    backward(b, t0 + 200000);
  }
  return b.trace;
}

// naive's SoftmaxBackward0 over [2, 8, 128, 256] bf16 (40 µs), between two 80 µs GEMMs; with
// `group_sums`, ExpandBackward0's two aten::sum (dV's, dK's) of 10 µs each.
trace::Trace naive_backward(bool group_sums) {
  return two_steps([&](testing::TraceBuilder& b, std::int64_t t) {
    b.op("BmmBackward0", t + 10, 900);
    b.kernel("nvjet_sm90_tst_64x64_64x13_2x1_v_bz_TNT", t + 20, t + 1000, 80000);
    b.op("SoftmaxBackward0", t + 1000, 900);
    trace::Event& sb = b.host(trace::Category::cpu_op, "aten::_softmax_backward_data", t + 1010, 800);
    sb.input_dims = "[[2, 8, 128, 256], [2, 8, 128, 256], [], []]";
    sb.input_types = R"(["c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"])";
    b.kernel("void (anonymous namespace)::softmax_warp_backward<c10::BFloat16, c10::BFloat16, float, 8, false, false>",
             t + 1020, t + 90000, 40000);
    b.op("BmmBackward0", t + 2000, 900);
    b.kernel("nvjet_sm90_tst_64x64_64x13_2x1_v_bz_TNT", t + 2020, t + 140000, 80000);
    if (!group_sums) return;
    for (std::int64_t at : {t + 3000, t + 4000}) {
      b.op("autograd::engine::evaluate_function: ExpandBackward0", at, 900);
      b.op("ExpandBackward0", at + 5, 890);
      b.op("aten::sum", at + 10, 800);
      b.kernel("void at::native::reduce_kernel<128, 4>", at + 20, at + 230000, 10000);
    }
  });
}

// A FlashAttention-style backward: the SDPA cuDNN backward op and its three kernels (5 + 60 + 5 µs).
trace::Trace cudnn_backward() {
  return two_steps([](testing::TraceBuilder& b, std::int64_t t) {
    b.op("ScaledDotProductCudnnAttentionBackward0", t + 10, 2000);
    b.op("aten::_scaled_dot_product_cudnn_attention_backward", t + 20, 1900);
    b.op("aten::_cudnn_attention_backward", t + 30, 1800);
    b.kernel("void cudnn::fusion::compute_dot_do_o_specialized<true, 64>", t + 40, t + 1000, 5000);
    b.kernel("cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x64", t + 50, t + 7000, 60000);
    b.kernel("void cudnn::fusion::convert_dq_to_16bits<true>", t + 60, t + 68000, 5000);
  });
}

TEST(BackwardInsights, ProbabilitiesKeptNamesTheBytesOfTheSavedSoftmax) {
  const auto insights = derive_backward_insights(naive_backward(false), facts_of(spec(8)));
  const Insight* kept = find(insights, "probabilities_kept");
  ASSERT_NE(kept, nullptr);
  // P: 2·8·128·256 elements · 2 B = 1,048,576 B = 1.0 MiB per step; the LSE 2·8·128 · 4 B = 8,192
  // B = 8.0 KiB; 1,048,576 / 8,192 = 128.
  EXPECT_TRUE(has(kept, "aten::_softmax_backward_data reads the S×S probabilities the forward kept (bf16)")) << kept->text;
  EXPECT_TRUE(has(kept, "2·8·128·256·2 B = 1.0 MiB kept from the forward per step")) << kept->text;
  EXPECT_TRUE(has(kept, "2·8·128·4 B = 8.0 KiB (128× less)")) << kept->text;
  EXPECT_EQ(kept->about.front(), "attn_bwd");
  EXPECT_EQ(find(insights, "scores_recomputed"), nullptr);
  EXPECT_EQ(find(insights, "dkdv_reduction"), nullptr);  // no GQA: H 8 = Hkv 8
}

TEST(BackwardInsights, ScoresRecomputedNamesTheExtraGemmAndTheMemoryItSaves) {
  const auto insights = derive_backward_insights(cudnn_backward(), facts_of(spec(8)));
  const Insight* recomputed = find(insights, "scores_recomputed");
  ASSERT_NE(recomputed, nullptr);
  // Q·Kᵀ over the visible pairs: top-left, row i of 128 sees i + 1 of the 256 keys, Σ = 128·129/2
  // = 8,256 of 32,768 pairs; 2·2·8·64·8,256 = 16,908,288 FLOP = 16.91 MFLOP; the backward's five
  // GEMMs: 84,541,440 = 84.54 MFLOP. Not kept: 2·8·128·256·2 B = 1.0 MiB.
  EXPECT_TRUE(has(recomputed, "aten::_scaled_dot_product_cudnn_attention_backward recomputes the scores"))
      << recomputed->text;
  EXPECT_TRUE(has(recomputed, "2·2·8·128·256·64 FLOP, over the 8256 of 32768 pairs the causal mask leaves visible = 16.91 MFLOP per step"))
      << recomputed->text;
  EXPECT_TRUE(has(recomputed, "20% of its 84.54 MFLOP")) << recomputed->text;
  EXPECT_TRUE(has(recomputed, "2·8·128·256·2 B = 1.0 MiB per step, only the fp32 log-sum-exp, B·H·Sq·4 B = 8.0 KiB"))
      << recomputed->text;
  EXPECT_EQ(find(insights, "probabilities_kept"), nullptr);
  // GQA, but the trace shows no group sum and cuDNN's kernel's reduction is not known: nothing said.
  EXPECT_EQ(find(derive_backward_insights(cudnn_backward(), facts_of(spec(2))), "dkdv_reduction"), nullptr);
}

TEST(BackwardInsights, ScoresRecomputedWithoutCausalMask) {
  AttentionSpec s = spec(8);
  s.causal = false;
  const auto insights = derive_backward_insights(cudnn_backward(), facts_of(s));
  const Insight* recomputed = find(insights, "scores_recomputed");
  // 2·2·8·128·256·64 = 67,108,864 FLOP = 67.11 MFLOP, nothing halved.
  EXPECT_TRUE(has(recomputed, "2·2·8·128·256·64 FLOP = 67.11 MFLOP per step")) << (recomputed ? recomputed->text : "");
}

TEST(BackwardInsights, GroupSumOfGqaGivesItsShareOfTheBackward) {
  const auto insights = derive_backward_insights(naive_backward(true), facts_of(spec(2)));
  const Insight* sum = find(insights, "dkdv_reduction");
  ASSERT_NE(sum, nullptr);
  // 8 / 2 = 4 heads per group; two 10 µs sums of 80 + 40 + 80 + 20 = 220 µs: 9.09%.
  EXPECT_TRUE(has(sum, "GQA, 4 query heads per kv head (8 → 2)")) << sum->text;
  EXPECT_TRUE(has(sum, "ExpandBackward0 › aten::sum: 2 per step, 20.0 µs per step, 9.09% of the backward's work"))
      << sum->text;
  // The same sums without GQA are not a group sum.
  EXPECT_EQ(find(derive_backward_insights(naive_backward(true), facts_of(spec(8))), "dkdv_reduction"), nullptr);
}

TEST(BackwardInsights, ForwardOnlyTracesGetNoBackwardInsight) {
  testing::TraceBuilder b;
  for (std::int64_t t0 : {0, 1000000}) {
    b.forward(t0, 100000);
    trace::Event& softmax = b.host(trace::Category::cpu_op, "aten::_softmax", t0 + 10, 500);
    softmax.input_dims = "[[2, 8, 128, 256], [], []]";
    b.kernel("void (anonymous namespace)::softmax_warp_forward<c10::BFloat16>", t0 + 20, t0 + 1000, 30000);
    b.op("aten::_scaled_dot_product_cudnn_attention", t0 + 600, 500);
    b.kernel("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16", t0 + 610, t0 + 40000, 30000);
  }
  EXPECT_TRUE(derive_backward_insights(b.trace, facts_of(spec(2))).empty());
  for (const char* stem : {"8_16_1024_64_naive", "8_16_1024_64_math", "8_16_1024_64_flash"}) {
    const std::string path = source_dir() + "/tests/data/pytorch-traces/" + std::string(stem) + ".json.gz";
    EXPECT_TRUE(derive_backward_insights(trace::read_trace_file(path), {}).empty()) << stem;
  }
  EXPECT_TRUE(derive_backward_insights(trace::read_trace_file(model("gpt_decode_kvcache_gqa")), {}).empty());
}

TEST(BackwardInsights, NaiveModelTraceKeepsItsFp32Probabilities) {
  // The recorded GPT (4 layers, B 8, H 4, S 256, bf16 autocast): SoftmaxBackward0 over fp32
  // [8, 4, 256, 256]: 8·4·256·256·4 B = 8,388,608 B = 8.0 MiB per call, 4 calls per step = 32.0
  // MiB; the LSE 8·4·256·4 B = 32,768 B = 32.0 KiB, 256× less.
  const auto insights = derive_insights(trace::read_trace_file(model("gpt_train_naive")), {});
  const Insight* kept = find(insights, "probabilities_kept");
  ASSERT_NE(kept, nullptr);
  EXPECT_TRUE(has(kept, "(fp32): 8·4·256·256·4 B = 8.0 MiB kept from the forward per call (4 calls per step: 32.0 MiB "
                        "per step)"))
      << kept->text;
  EXPECT_TRUE(has(kept, "8·4·256·4 B = 32.0 KiB (256× less)")) << kept->text;
  EXPECT_EQ(kept->about.front(), "SoftmaxBackward0");
  EXPECT_EQ(find(insights, "scores_recomputed"), nullptr);
  EXPECT_EQ(find(insights, "dkdv_reduction"), nullptr);  // H 4 = Hkv 4
}

TEST(BackwardInsights, CudnnModelTraceRecomputesItsScores) {
  // cuDNN's SDPA backward at 8x4x256x256x64, bf16, is_causal recorded True: 256·257/2 = 32,896 of
  // 65,536 pairs visible, 2·8·4·64·32,896 = 134,742,016 FLOP = 134.74 MFLOP per call; five GEMMs
  // 673,710,080 = 673.71 MFLOP; 8·4·256·256·2 B = 4.0 MiB.
  const auto insights = derive_insights(trace::read_trace_file(model("gpt_train_sdpa_cudnn")), {});
  const Insight* recomputed = find(insights, "scores_recomputed");
  ASSERT_NE(recomputed, nullptr);
  EXPECT_TRUE(has(recomputed, "2·8·4·256·256·64 FLOP, over the 32896 of 65536 pairs the causal mask leaves visible = 134.74 MFLOP per call"))
      << recomputed->text;
  EXPECT_TRUE(has(recomputed, "20% of its 673.71 MFLOP")) << recomputed->text;
  EXPECT_TRUE(has(recomputed, "8·4·256·256·2 B = 4.0 MiB per call")) << recomputed->text;
  EXPECT_EQ(recomputed->about.front(), "ScaledDotProductCudnnAttentionBackward0");
  EXPECT_EQ(find(insights, "probabilities_kept"), nullptr);
  EXPECT_EQ(find(insights, "dkdv_reduction"), nullptr);
  // FlexAttention's compiled backward is neither a softmax backward nor one of the named ops.
  const auto flex = derive_insights(trace::read_trace_file(model("gpt_train_flex_compiled")), {});
  EXPECT_EQ(find(flex, "probabilities_kept"), nullptr);
}

TEST(BackwardInsights, FlopCountFormat) {
  EXPECT_EQ(format_flop_count(524288), "524,288 FLOP");
  EXPECT_EQ(format_flop_count(33554432), "33.55 MFLOP");
  EXPECT_EQ(format_flop_count(2.5e9), "2.50 GFLOP");
  EXPECT_EQ(format_flop_count(1.1e12), "1.10 TFLOP");
}

}  // namespace
}  // namespace attnprof::report
