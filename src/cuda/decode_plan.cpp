#include "cuda/decode_plan.h"

#include <algorithm>

#include "core/saturating.h"

namespace attnprof::cuda {

DecodeShape DecodeShape::of(const FusedAttentionArgs& args) {
  return DecodeShape{args.batch, args.heads, args.kv_heads, args.seq_q, args.seq_k, args.head_dim, args.causal,
                     args.causal_offset};
}

DecodeShape DecodeShape::of(const AttentionSpec& spec) {
  return DecodeShape{spec.batch, spec.heads,    spec.kv_heads, spec.seq_q,
                     spec.seq_k, spec.head_dim, spec.causal,   spec.causal_offset()};
}

std::int64_t DecodePlan::workspace_bytes(const DecodeShape& shape) const {
  if (splits <= 1 || merges_in_clusters()) return 0;
  // [B·H·Sq rows][splits] × (D floats of O + one LSE)
  return sat_product({shape.batch, shape.heads, shape.seq_q, splits, shape.head_dim + 1, 4});
}

DecodePlan decode_plan_with_splits(const DecodeShape& s, std::int64_t splits) {
  if (s.head_dim != 64 && s.head_dim != 128) return {};
  if (s.seq_q < 1 || s.seq_q > kDecodeMaxSeqQ || s.kv_heads < 1 || s.heads % s.kv_heads != 0 || s.batch < 1) return {};
  const std::int64_t rows = s.heads / s.kv_heads * s.seq_q;
  const std::int64_t row_blocks = (rows + kDecodeRowsPerCta - 1) / kDecodeRowsPerCta;
  if (row_blocks > kDecodeMaxRowBlocks) return {};
  const std::int64_t keys = s.causal ? std::clamp<std::int64_t>(s.seq_q + s.causal_offset, 0, s.seq_k) : s.seq_k;
  if (keys < 1 || s.seq_k + s.seq_q > (std::int64_t{1} << 30)) return {};
  // x of the grid: (batch, kv head, row block) < 2^31; y: splits.
  if (sat_product({s.batch, s.kv_heads, row_blocks}) >= (std::int64_t{1} << 31)) return {};
  splits = std::clamp<std::int64_t>(splits, 1, kDecodeMaxSplits);
  DecodePlan plan;
  plan.rows = rows;
  plan.row_blocks = static_cast<int>(row_blocks);
  plan.keys = keys;
  const std::int64_t per_split = (keys + splits - 1) / splits;
  plan.keys_per_split = (per_split + kDecodeSplitAlign - 1) / kDecodeSplitAlign * kDecodeSplitAlign;
  // Rounding up may leave the last splits without keys: only the ones that hold keys are launched.
  plan.splits = static_cast<int>((keys + plan.keys_per_split - 1) / plan.keys_per_split);
  return plan;
}

DecodePlan plan_decode(const DecodeShape& s, int sm_count, DecodeGridRule rule) {
  const DecodePlan any = decode_plan_with_splits(s, 1);
  if (!any.runs() || any.keys < kDecodeMinKeys) return {};
  const std::int64_t ctas_per_split = s.batch * s.kv_heads * any.row_blocks;
  const std::int64_t slots = std::max(sm_count, 1) * std::max<std::int64_t>(rule.ctas_per_sm, 1);
  const std::int64_t most = std::clamp<std::int64_t>(any.keys / kDecodeMinKeysPerSplit, 1, kDecodeMaxSplits);
  const std::int64_t waves = std::max<std::int64_t>(rule.waves, 1);
  const std::int64_t fewest = std::min(std::max<std::int64_t>(waves * slots / ctas_per_split, 1), most);
  // From the most splits whose CTAs stay within rule.waves waves (at least one split) up to twice
  // as many: the one whose CTAs fill their last wave best, ctas / room (compared as integers); on a
  // tie, fewer splits (longer stretches of keys a CTA, fewer partial rows to merge).
  DecodePlan best;
  std::int64_t best_ctas = 0, best_room = 1;
  for (std::int64_t splits = fewest; splits <= std::min(2 * fewest, most); ++splits) {
    const DecodePlan plan = decode_plan_with_splits(s, splits);
    const std::int64_t ctas = ctas_per_split * plan.splits, room = (ctas + slots - 1) / slots * slots;
    if (!best.runs() || ctas * best_room > best_ctas * room) best = plan, best_ctas = ctas, best_room = room;
  }
  return best;
}

DecodePlan plan_decode(const DecodeShape& s, int sm_count, std::int64_t smem_per_block) {
  const DecodePlan two = plan_decode(s, sm_count, decode_grid_rule(s.head_dim));
  if (!two.runs() || s.head_dim != 128 || smem_per_block < kDecodeOneCtaSmemBytes) return two;
  DecodePlan one = plan_decode(s, sm_count, DecodeGridRule{kDecodeWaves, kDecodeGeometry128OneCta.ctas_per_sm});
  const std::int64_t columns = s.batch * s.kv_heads * two.row_blocks;
  const std::int64_t ctas_one = columns * one.splits, ctas_two = columns * two.splits;
  // Fills compared as integers: ctas_one / SMs against ctas_two / (SMs · the two-CTA geometry's CTAs an SM).
  if (!one.runs() || ctas_one > std::max(sm_count, 1) || ctas_one * kDecodeGeometry128.ctas_per_sm < ctas_two)
    return two;
  one.one_cta_per_sm = true;
  return one;
}

bool DecodePlan::fits(const DecodeShape& shape) const {
  const DecodePlan same = decode_plan_with_splits(shape, splits);
  return runs() && same.runs() && same.splits == splits && same.keys_per_split == keys_per_split &&
         same.rows == rows && same.row_blocks == row_blocks && same.keys == keys &&
         (!one_cta_per_sm || shape.head_dim == 128);
}

}  // namespace attnprof::cuda
