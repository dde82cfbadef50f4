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

// The pairs a causal mask leaves visible, counted by hand: top-left Sq 128 over Sk 256, row i sees
// i + 1 keys: 128·129/2 = 8,256; bottom-right Sq 200 over Sk 72: rows 0..127 see none, row 128 + r
// sees r + 1: 72·73/2 = 2,628; bottom-right Sq 3 over Sk 10: 8 + 9 + 10 = 27; no mask: Sq·Sk.
TEST(AttentionSpec, VisiblePairsOfTheMask) {
  AttentionSpec spec{.batch = 1, .heads = 1, .seq_q = 128, .seq_k = 256, .head_dim = 8, .causal = true};
  EXPECT_DOUBLE_EQ(spec.visible_pairs(), 8256.0);
  spec.causal = false;
  EXPECT_DOUBLE_EQ(spec.visible_pairs(), 128.0 * 256.0);
  spec = {.batch = 1, .heads = 1, .seq_q = 200, .seq_k = 72, .head_dim = 8, .causal = true,
          .causal_align = CausalAlign::bottom_right};
  EXPECT_DOUBLE_EQ(spec.visible_pairs(), 2628.0);
  spec.seq_q = 3;
  spec.seq_k = 10;
  EXPECT_DOUBLE_EQ(spec.visible_pairs(), 27.0);
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
