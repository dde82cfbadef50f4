// plan_decode (src/cuda/decode_plan.h): whether the split-KV decode kernels run and with how many
// splits, against counts worked out by hand from the cost model (from the most splits whose CTAs
// fit the rule's waves of SMs × CTAs an SM to twice as many, the fullest last wave, fewest on a
// tie; at least 512 keys and at most 128 splits; 128-key multiples per split).
#include <gtest/gtest.h>

#include "cuda/decode_plan.h"

using namespace attnprof::cuda;

namespace {

constexpr int kH200Sms = 132;
// The rule the counts below are worked out for: 3 waves of SMs × 2 CTAs. Passed explicitly, so
// switching the production geometry or its rule does not move them.
constexpr DecodeGridRule kRule{3, 2};
constexpr std::int64_t kH200SmemPerBlock = 227 * 1024;  // cudaDevAttrMaxSharedMemoryPerBlockOptin

// Llama-style decode: 32 query heads on 8 kv heads, one query row, D 128, causal bottom-right.
DecodeShape decode_shape(std::int64_t batch, std::int64_t seq_k) {
  DecodeShape s;
  s.batch = batch;
  s.heads = 32;
  s.kv_heads = 8;
  s.seq_q = 1;
  s.seq_k = seq_k;
  s.head_dim = 128;
  s.causal = true;
  s.causal_offset = seq_k - 1;  // bottom-right: the one row sees every key
  return s;
}

}  // namespace

TEST(DecodePlan, Llama8BatchSplitsToFillWholeWavesOfTheH200) {
  // 8·8 = 64 CTAs per split, waves of 132·2 = 264; 3 waves hold 792 CTAs: 12 splits (768 CTAs,
  // 768 / 792 = 32/33; 32768 / 12 = 2731 keys, rounded up to 22·128 = 2816); 13 → 832 / 1056,
  // 14 → 896 / 1056, 15 → 960 / 1056; 16, 20 and 24 only tie at 32/33 (1024 / 1056, 1280 / 1320,
  // 1536 / 1584): 12 splits.
  const DecodeShape s = decode_shape(8, 32768);
  const DecodePlan p = plan_decode(s, kH200Sms, kRule);
  ASSERT_TRUE(p.runs());
  EXPECT_EQ(p.splits, 12);
  EXPECT_EQ(p.keys_per_split, 2816);
  EXPECT_EQ(p.rows, 4);  // 4 query heads × 1 row in one 16-row tile
  EXPECT_EQ(p.row_blocks, 1);
  EXPECT_EQ(p.keys, 32768);
  // 8·32·1 rows × 12 splits × (128 + 1) floats × 4 B
  EXPECT_EQ(p.workspace_bytes(s), 8 * 32 * 12 * 129 * 4);
  EXPECT_TRUE(p.fits(s));
}

TEST(DecodePlan, RoundingSplitsToWhole128KeyMultiplesCanLeaveFewer) {
  // 13 splits of 4096 keys round to 384 keys a split: 11 splits.
  EXPECT_EQ(decode_plan_with_splits(decode_shape(8, 4096), 13).splits, 11);
  // plan_decode: at most 4096 / 512 = 8 splits, of 512 keys (512 CTAs, 512 / 528).
  const DecodePlan p = plan_decode(decode_shape(8, 4096), kH200Sms, kRule);
  EXPECT_EQ(p.splits, 8);
  EXPECT_EQ(p.keys_per_split, 512);
  // 131072: 13 → 10112 (79·128) keys, 13 splits (832 / 1056); 12 → 10923 keys, rounded up to
  // 11008 (86·128), 12 splits (768 / 792 = 32/33, which 16 and 20 only tie).
  EXPECT_EQ(decode_plan_with_splits(decode_shape(8, 131072), 13).keys_per_split, 10112);
  const DecodePlan long_cache = plan_decode(decode_shape(8, 131072), kH200Sms, kRule);
  EXPECT_EQ(long_cache.splits, 12);
  EXPECT_EQ(long_cache.keys_per_split, 11008);
}

TEST(DecodePlan, LargeBatchesSplitLessAndAFullGridNotAtAll) {
  // 64·8 = 512 CTAs per split: 792 / 512 → 1 split (512 / 528) up to 2 (1024 / 1056, a tie): 1;
  // with 1 CTA an SM (396 CTAs in 3 waves of 132) still 1 (512 / 528; 2 → 1024 / 1056).
  EXPECT_EQ(plan_decode(decode_shape(64, 8192), kH200Sms, kRule).splits, 1);
  EXPECT_EQ(plan_decode(decode_shape(64, 8192), kH200Sms, DecodeGridRule{3, 1}).splits, 1);
  // 40·8 = 320 CTAs per split: 792 / 320 → 2 splits (640 / 792) up to 4; 3 → 960 / 1056,
  // 4 → 1280 / 1320: 4 splits of 2048 keys.
  const DecodePlan four = plan_decode(decode_shape(40, 8192), kH200Sms, kRule);
  EXPECT_EQ(four.splits, 4);
  EXPECT_EQ(four.keys_per_split, 2048);
  // 128·8 = 1024 CTAs ≥ 792: one split (1024 / 1056; 2 ties), the kernel writes O itself, no workspace.
  const DecodeShape full = decode_shape(128, 8192);
  const DecodePlan one = plan_decode(full, kH200Sms, kRule);
  ASSERT_TRUE(one.runs());
  EXPECT_EQ(one.splits, 1);
  EXPECT_EQ(one.workspace_bytes(full), 0);
}

TEST(DecodePlan, FewerSmsWantFewerSplits) {
  // Waves of 66·2 = 132: 3 waves hold 396 CTAs, 6 splits (384 / 396 = 32/33, which 8, 10 and 12
  // only tie: 512 / 528, 640 / 660, 768 / 792).
  EXPECT_EQ(plan_decode(decode_shape(8, 32768), 66, kRule).splits, 6);
}

TEST(DecodePlan, TheGridRuleSetsTheWavesAndCtasPerSmAimedAt) {
  // 1 CTA per SM, 3 waves of 132 hold 396 CTAs: 6 splits (384 / 396, 5504 keys each) up to 12;
  // 8, 10 and 12 only tie (512 / 528, 640 / 660, 768 / 792): 6.
  const DecodePlan one_per_sm = plan_decode(decode_shape(8, 32768), kH200Sms, DecodeGridRule{3, 1});
  EXPECT_EQ(one_per_sm.splits, 6);
  EXPECT_EQ(one_per_sm.keys_per_split, 5504);
  // 1 wave of 264 (the production rule): 4 splits (256 / 264, 8192 keys each) up to 8; 5 → 320 /
  // 528, 6 → 384 / 528, 7 → 448 / 528, 8 → 512 / 528 (a tie): 4.
  const DecodePlan one_wave = plan_decode(decode_shape(8, 32768), kH200Sms, DecodeGridRule{1, 2});
  EXPECT_EQ(one_wave.splits, 4);
  EXPECT_EQ(one_wave.keys_per_split, 8192);
  // The two-CTA production rule at D 128 and D 64 is that one (decode_grid_rule).
  EXPECT_EQ(decode_grid_rule(128).waves, 1);
  EXPECT_EQ(decode_grid_rule(128).ctas_per_sm, 2);
  EXPECT_EQ(decode_grid_rule(64).waves, 1);
}

TEST(DecodePlan, FlashsPlanTakesOneCtaAnSmWhenItsGridFitsOneWave) {
  // 8 batch × 8 kv heads = 64 columns. One CTA an SM, one wave of 132: 2 splits (128 / 132) up to
  // 4; 3 → 192 / 264, 4 → 256 / 264 (a tie): 2. Its 128 CTAs fit the 132 SMs, and 2 · 128 is no
  // less than the two-CTA plan's 256 (4 splits): one CTA an SM, 2 splits of 16384 keys.
  const DecodePlan one = plan_decode(decode_shape(8, 32768), kH200Sms, kH200SmemPerBlock);
  EXPECT_TRUE(one.one_cta_per_sm);
  EXPECT_EQ(one.splits, 2);
  EXPECT_EQ(one.keys_per_split, 16384);
  EXPECT_TRUE(one.fits(decode_shape(8, 32768)));
  EXPECT_TRUE(plan_decode(decode_shape(8, 4096), kH200Sms, kH200SmemPerBlock).one_cta_per_sm);
  EXPECT_EQ(plan_decode(decode_shape(8, 4096), kH200Sms, kH200SmemPerBlock).splits, 2);
  // 64 batch: 512 columns, more than 132 SMs even at one split: the two-CTA plan, 1 split.
  const DecodePlan two = plan_decode(decode_shape(64, 8192), kH200Sms, kH200SmemPerBlock);
  EXPECT_FALSE(two.one_cta_per_sm);
  EXPECT_EQ(two.splits, 1);
  // 3 batch: 24 columns; one CTA an SM: 5 splits (120 / 132); two CTAs: 11 splits (264 / 264).
  // 2 · 120 = 240 < 264: the two-CTA grid fills its slots better.
  const DecodePlan three = plan_decode(decode_shape(3, 32768), kH200Sms, kH200SmemPerBlock);
  EXPECT_FALSE(three.one_cta_per_sm);
  EXPECT_EQ(three.splits, 11);
  // Head dim 64 has no one-CTA geometry: the two-CTA plan, 4 splits; a one-CTA plan does not fit.
  DecodeShape d64 = decode_shape(8, 32768);
  d64.head_dim = 64;
  const DecodePlan plan64 = plan_decode(d64, kH200Sms, kH200SmemPerBlock);
  EXPECT_FALSE(plan64.one_cta_per_sm);
  EXPECT_EQ(plan64.splits, 4);
  DecodePlan forced = plan64;
  forced.one_cta_per_sm = true;
  EXPECT_FALSE(forced.fits(d64));
  // A100: 108 SMs, at most 163 KiB of shared memory a CTA, too little for the one-CTA geometry's
  // 196: the two-CTA plan, whatever the fill (1x32/8 at seq-k 4096: 8 splits either way).
  EXPECT_FALSE(plan_decode(decode_shape(1, 4096), 108, 166912).one_cta_per_sm);
  EXPECT_TRUE(plan_decode(decode_shape(1, 4096), 108, kH200SmemPerBlock).one_cta_per_sm);
  EXPECT_EQ(kDecodeOneCtaSmemBytes, 4096 + 196608 + 128);
}

// The one-CTA geometry's items of 2 splits merge in thread block clusters, with no workspace;
// other plans merge through the workspace.
TEST(DecodePlan, OneCtaPlansOfTwoSplitsMergeInClusters) {
  const DecodeShape s = decode_shape(8, 32768);
  const DecodePlan two_splits = plan_decode(s, kH200Sms, kH200SmemPerBlock);
  ASSERT_TRUE(two_splits.one_cta_per_sm);
  EXPECT_TRUE(two_splits.merges_in_clusters());
  EXPECT_EQ(two_splits.workspace_bytes(s), 0);
  EXPECT_EQ(kDecodeMaxClusterSplits, 2);
  // 2 batch: 16 columns, one CTA an SM: 8 splits (128 / 132), through the workspace: 64 rows · 8
  // splits · (128 + 1) floats.
  const DecodeShape two_batch = decode_shape(2, 32768);
  const DecodePlan eight = plan_decode(two_batch, kH200Sms, kH200SmemPerBlock);
  ASSERT_TRUE(eight.one_cta_per_sm);
  EXPECT_EQ(eight.splits, 8);
  EXPECT_FALSE(eight.merges_in_clusters());
  EXPECT_EQ(eight.workspace_bytes(two_batch), 64 * 8 * 129 * 4);
  // 3 splits forced on the one-CTA geometry: the workspace, 256 rows · 3 splits · (128 + 1) floats.
  DecodePlan three = decode_plan_with_splits(s, 3);
  three.one_cta_per_sm = true;
  ASSERT_TRUE(three.fits(s));
  EXPECT_FALSE(three.merges_in_clusters());
  EXPECT_EQ(three.workspace_bytes(s), 256 * 3 * 129 * 4);
  // The two-CTA geometry (one wave of 2 CTAs an SM: 4 splits) merges through the workspace at any
  // split count; one split needs no merge.
  const DecodePlan two_cta = plan_decode(s, kH200Sms, decode_grid_rule(128));
  EXPECT_FALSE(two_cta.one_cta_per_sm);
  EXPECT_EQ(two_cta.splits, 4);
  EXPECT_FALSE(two_cta.merges_in_clusters());
  EXPECT_EQ(two_cta.workspace_bytes(s), 256 * 4 * 129 * 4);
  DecodePlan one_split = decode_plan_with_splits(s, 1);
  one_split.one_cta_per_sm = true;
  EXPECT_FALSE(one_split.merges_in_clusters());
  EXPECT_EQ(one_split.workspace_bytes(s), 0);
}

TEST(DecodePlan, ShortCachesAreCappedAt512KeysASplit) {
  // 512 keys: one split, whatever the grid wants; 1024: at most 2; 1535: still 2 (1535 / 512 = 2).
  const DecodePlan p = plan_decode(decode_shape(8, 512), kH200Sms, kRule);
  EXPECT_EQ(p.splits, 1);
  EXPECT_EQ(p.keys_per_split, 512);
  EXPECT_EQ(plan_decode(decode_shape(8, 1024), kH200Sms, kRule).splits, 2);
  EXPECT_EQ(plan_decode(decode_shape(8, 1535), kH200Sms, kRule).splits, 2);
  EXPECT_FALSE(plan_decode(decode_shape(8, 511), kH200Sms, kRule).runs());  // below 512 keys: the tile kernels
  // The workspace stays under one bf16 score row per query row: at 1024 keys, 2 · 129 · 4 = 1032 B
  // against 1024 · 2 = 2048 B.
  const DecodeShape s = decode_shape(8, 1024);
  EXPECT_LT(plan_decode(s, kH200Sms, kRule).workspace_bytes(s), s.batch * s.heads * s.seq_q * s.seq_k * 2);
}

TEST(DecodePlan, RunsOnlyForFewRowsManyKeysAndTheInstantiatedHeadDims) {
  DecodeShape s = decode_shape(8, 4096);
  s.seq_q = 16;
  s.causal_offset = s.seq_k - s.seq_q;
  EXPECT_TRUE(plan_decode(s, kH200Sms, kRule).runs());  // 4 heads × 16 rows = 64 rows: 4 row blocks
  EXPECT_EQ(plan_decode(s, kH200Sms, kRule).row_blocks, 4);
  s.seq_q = 17;
  s.causal_offset = s.seq_k - s.seq_q;
  EXPECT_FALSE(plan_decode(s, kH200Sms, kRule).runs());  // more than 16 query rows
  s = decode_shape(8, 4096);
  s.kv_heads = 1;  // MQA: 32 rows per query row
  s.seq_q = 2;
  EXPECT_EQ(plan_decode(s, kH200Sms, kRule).row_blocks, 4);
  s.seq_q = 3;  // 96 rows: 6 row blocks, each reading K/V again
  EXPECT_FALSE(plan_decode(s, kH200Sms, kRule).runs());
  s = decode_shape(8, 4096);
  s.head_dim = 64;
  EXPECT_TRUE(plan_decode(s, kH200Sms, kRule).runs());
  s.head_dim = 96;
  EXPECT_FALSE(plan_decode(s, kH200Sms, kRule).runs());
}

TEST(DecodePlan, CountsTheKeysTheLastRowSees) {
  DecodeShape s = decode_shape(8, 4096);
  s.seq_q = 4;
  s.causal_offset = 0;  // top-left: the last of 4 rows sees 4 keys
  EXPECT_FALSE(plan_decode(s, kH200Sms, kRule).runs());
  s.causal_offset = 600 - 4;  // the last row sees 600 keys of 4096
  const DecodePlan p = plan_decode(s, kH200Sms, kRule);
  ASSERT_TRUE(p.runs());
  EXPECT_EQ(p.keys, 600);
  EXPECT_EQ(p.splits, 1);  // 600 / 512 → at most 1 split
  s.causal = false;        // not causal: the offset means nothing
  EXPECT_EQ(plan_decode(s, kH200Sms, kRule).keys, 4096);
  s.causal = true;
  s.causal_offset = -10;  // no row sees a key
  EXPECT_FALSE(plan_decode(s, kH200Sms, kRule).runs());
}

TEST(DecodePlan, ForcedSplitCountsAreClampedAndPlansCheckTheirShape) {
  const DecodeShape s = decode_shape(2, 32768);
  const DecodePlan most = decode_plan_with_splits(s, 1000);
  EXPECT_EQ(most.splits, 128);
  EXPECT_EQ(most.keys_per_split, 256);
  EXPECT_EQ(decode_plan_with_splits(s, 0).splits, 1);
  // 3 splits of 32768: 10923 → 11008 (86·128) keys a split → still 3.
  EXPECT_EQ(decode_plan_with_splits(s, 3).keys_per_split, 11008);
  DecodePlan wrong = decode_plan_with_splits(s, 3);
  wrong.keys_per_split = 1024;  // 32 splits' worth: not the plan for 3
  EXPECT_FALSE(wrong.fits(s));
  DecodeShape other = s;
  other.seq_k = 32769;
  other.causal_offset = 32768;  // the row sees 32769 keys: the same splits, other keys
  EXPECT_FALSE(decode_plan_with_splits(s, 3).fits(other));
  EXPECT_FALSE(DecodePlan{}.fits(s));
}
