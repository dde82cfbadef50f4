// What each variant's forward keeps for its backward and the backward's own peak extra memory, at
// S = 2048: naive and inplace keep the S×S probabilities and hold two more S×S tensors while they
// run (dP, and the softmax backward's output or its masked clone); fused keeps them and overwrites
// dP in place; math keeps fp32 probabilities; efficient and flash keep only the log-sum-exp and
// never hold an S×S tensor. backward_workspace_estimate (the preflight of --pass backward|train)
// must cover what was kept plus the backward's peak.
#include <attnprof/attention.h>
#include <attnprof/memory.h>
#include <attnprof/variant.h>
#include <gtest/gtest.h>

#include <string>

namespace attnprof {
namespace {

class BackwardPeakMemory : public ::testing::TestWithParam<std::string> {};

TEST_P(BackwardPeakMemory, AtSeq2048) {
  AttentionSpec spec;
  spec.batch = 1;
  spec.heads = spec.kv_heads = 2;
  spec.seq_q = spec.seq_k = 2048;
  spec.head_dim = 64;
  spec.dtype = DType::bf16;
  spec.causal = true;
  const std::int64_t scores = spec.batch * spec.heads * spec.seq_q * spec.seq_k * 2;  // one bf16 S×S: 16 MiB
  const std::int64_t bhsd = spec.batch * spec.heads * spec.seq_q * spec.head_dim * 2;  // one q-sized tensor: 512 KiB
  Variant* variant = find_variant(GetParam());
  const AttentionInputs in = make_inputs(spec, 3);
  const Tensor dout = make_output_grad(spec, 3);
  Tensor out = make_output(spec);
  AttentionGrads g = make_grads(spec);
  variant->prepare(spec);
  const std::int64_t live_before = memory::stats(Device::cpu).current_bytes;
  variant->forward_for_backward(spec, in.q, in.k, in.v, out);
  const std::int64_t live = memory::stats(Device::cpu).current_bytes;
  const std::int64_t kept = live - live_before;
  memory::reset_peak(Device::cpu);
  variant->backward(spec, in.q, in.k, in.v, out, dout, g.dq, g.dk, g.dv);
  const std::int64_t peak = memory::stats(Device::cpu).peak_bytes - live;
  EXPECT_EQ(memory::stats(Device::cpu).current_bytes, live) << "the backward leaked";
  variant->release_saved();
  EXPECT_EQ(memory::stats(Device::cpu).current_bytes, live_before) << "release_saved() left the kept tensors";
  RecordProperty("kept_bytes", std::to_string(kept));
  RecordProperty("backward_peak_extra_bytes", std::to_string(peak));
  const std::string name = GetParam();
  if (name == "naive" || name == "inplace") {
    EXPECT_EQ(kept, scores) << "the probabilities";
    EXPECT_GE(peak, 2 * scores) << "dP beside the softmax backward's output";
    EXPECT_LT(peak, 3 * scores);
  } else if (name == "fused") {
    EXPECT_EQ(kept, scores) << "the probabilities (the scores' buffer)";
    EXPECT_GE(peak, scores) << "dP";
    EXPECT_LT(peak, 2 * scores) << "dS overwrites dP";
  } else if (name == "math") {
    EXPECT_GE(kept, 2 * scores) << "fp32 probabilities";
    EXPECT_LT(kept, 2 * scores + 8 * bhsd) << "plus the fp32 q·√s, k·√s and v only";
    EXPECT_GE(peak, 4 * scores) << "fp32 dP beside fp32 dS";
  } else {  // efficient, flash
    EXPECT_EQ(kept, spec.batch * spec.heads * spec.seq_q * 4) << "the fp32 log-sum-exp only";
    EXPECT_LT(peak, scores / 4) << "no S×S buffer";
  }
  const std::int64_t estimate = variant->backward_workspace_estimate(spec);
  EXPECT_GE(estimate, kept + peak) << "backward_workspace_estimate must cover what was kept plus the peak";
  EXPECT_LE(estimate, 3 * (kept + peak) + (1 << 20)) << "and not be wildly above it";
}

INSTANTIATE_TEST_SUITE_P(Cpu, BackwardPeakMemory,
                         ::testing::Values("naive", "inplace", "math", "fused", "efficient", "flash"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace attnprof
