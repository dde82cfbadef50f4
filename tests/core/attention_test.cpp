#include <attnprof/attention.h>
#include <attnprof/error.h>
#include <gtest/gtest.h>

using namespace attnprof;

TEST(AttentionSpec, FlopsHalveForCausal) {
  AttentionSpec spec;  // 8, 16, 1024, 64
  spec.causal = false;
  EXPECT_DOUBLE_EQ(spec.flops(), 4.0 * 8 * 16 * 1024 * 1024 * 64);
  spec.causal = true;
  EXPECT_DOUBLE_EQ(spec.flops(), 2.0 * 8 * 16 * 1024 * 1024 * 64);
}

TEST(AttentionSpec, ValidateRejectsBadShapes) {
  AttentionSpec spec;
  spec.kv_heads = 5;
  EXPECT_THROW(spec.validate(), UsageError);
  spec = AttentionSpec{};
  spec.seq_q = 0;
  EXPECT_THROW(spec.validate(), UsageError);
  spec = AttentionSpec{};
  spec.batch = 1 << 20;
  spec.seq_q = spec.seq_k = 1 << 22;
  EXPECT_THROW(spec.validate(), UsageError);  // B·H·S·S·8 overflows 64 bits
  spec = AttentionSpec{};
  spec.heads = 32;
  spec.kv_heads = 8;
  EXPECT_NO_THROW(spec.validate());
}

TEST(AttentionInputs, BshdLayoutUsesStrides) {
  AttentionSpec spec;
  spec.batch = 2;
  spec.heads = 4;
  spec.kv_heads = 2;
  spec.seq_q = spec.seq_k = 3;
  spec.head_dim = 8;
  spec.layout = Layout::bshd;
  AttentionInputs in = make_inputs(spec, 1);
  EXPECT_EQ(in.q.shape(), (std::vector<std::int64_t>{2, 4, 3, 8}));
  EXPECT_EQ(in.q.strides(), (std::vector<std::int64_t>{3 * 4 * 8, 8, 4 * 8, 1}));
  EXPECT_EQ(in.k.shape(), (std::vector<std::int64_t>{2, 2, 3, 8}));
  Tensor out = make_output(spec);
  EXPECT_EQ(out.strides(), in.q.strides());
}
