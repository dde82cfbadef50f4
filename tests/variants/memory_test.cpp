// Peak extra memory of one forward at S = 4096 (issue 2, acceptance 5): flash and efficient stay
// O(B·H·S·D) with no S×S buffer; naive, inplace, fused and math hold S×S scores. Each variant's
// workspace_estimate (used by the memory preflight) must cover what it really allocated.
#include <attnprof/attention.h>
#include <attnprof/memory.h>
#include <attnprof/variant.h>
#include <gtest/gtest.h>

#include <string>

namespace attnprof {
namespace {

struct Measured {
  std::int64_t peak_extra;
  std::int64_t estimate;
};

Measured measure(const std::string& name, const AttentionSpec& spec) {
  Variant* variant = find_variant(name);
  const AttentionInputs in = make_inputs(spec, 3);
  Tensor out = make_output(spec);
  variant->prepare(spec);
  const std::int64_t live = memory::stats(Device::cpu).current_bytes;
  memory::reset_peak(Device::cpu);
  variant->forward(spec, in.q, in.k, in.v, out);
  const std::int64_t peak_extra = memory::stats(Device::cpu).peak_bytes - live;
  EXPECT_EQ(memory::stats(Device::cpu).current_bytes, live) << name << " leaked";
  return {peak_extra, variant->workspace_estimate(spec)};
}

class PeakMemory : public ::testing::TestWithParam<std::string> {};

TEST_P(PeakMemory, AtSeq4096) {
  AttentionSpec spec;
  spec.batch = 1;
  spec.heads = spec.kv_heads = 2;
  spec.seq_q = spec.seq_k = 4096;
  spec.head_dim = 64;
  spec.dtype = DType::bf16;
  spec.causal = true;
  const std::int64_t esize = 2;
  const std::int64_t scores = spec.batch * spec.heads * spec.seq_q * spec.seq_k * esize;  // one S×S tensor: 64 MiB
  const std::int64_t bhsd = spec.batch * spec.heads * spec.seq_q * spec.head_dim * esize;  // one q-sized tensor: 1 MiB
  const Measured m = measure(GetParam(), spec);
  RecordProperty("peak_extra_bytes", std::to_string(m.peak_extra));
  if (GetParam() == "flash" || GetParam() == "efficient") {
    EXPECT_LE(m.peak_extra, 8 * bhsd) << "O(B·H·S·D): a few q-sized buffers at most";
    EXPECT_LT(m.peak_extra, scores / 16) << "no S×S buffer";
  } else if (GetParam() == "naive" || GetParam() == "inplace") {
    EXPECT_GE(m.peak_extra, 2 * scores) << "two S×S score tensors live at once";
  } else if (GetParam() == "fused") {
    EXPECT_GE(m.peak_extra, scores) << "the S×S scores";
    EXPECT_LT(m.peak_extra, 2 * scores) << "the softmax runs in place: one S×S buffer, as torch.compile's";
  } else {  // math: PyTorch's peak is the fp32 scores and softmax plus the bool isneginf mask
    const std::int64_t fp32_and_bool = 2 * 2 * scores + scores / 2;
    EXPECT_GE(m.peak_extra, fp32_and_bool);
    const std::int64_t causal_masks = 6 * spec.seq_q * spec.seq_k;  // bool keep, its negation, fp32 additive
    EXPECT_LT(m.peak_extra, fp32_and_bool + causal_masks + 16 * bhsd)
        << "not a third fp32 S×S tensor (the where's output)";
  }
  EXPECT_GE(m.estimate, m.peak_extra) << "workspace_estimate must cover the real peak";
  EXPECT_LE(m.estimate, 3 * m.peak_extra + (1 << 20)) << "and not be wildly above it";
}

INSTANTIATE_TEST_SUITE_P(Cpu, PeakMemory,
                         ::testing::Values("naive", "inplace", "math", "fused", "efficient", "flash"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace attnprof
