#pragma once
// Whether a forward runs the split-KV decode kernels (decode_forward.h) and with how many splits:
// host arithmetic only, tested without a GPU (tests/cuda/decode_plan_test.cpp).
#include <attnprof/attention.h>

#include <cstdint>

#include "cuda/fused_attention.h"
#include "cuda/hopper/host_device.h"

namespace attnprof::cuda {

// The shape fields the choice reads (from a FusedAttentionArgs or an AttentionSpec).
struct DecodeShape {
  std::int64_t batch = 0, heads = 0, kv_heads = 0, seq_q = 0, seq_k = 0, head_dim = 0;
  bool causal = false;
  std::int64_t causal_offset = 0;  // row i sees key j iff j <= i + causal_offset (causal only)
  static DecodeShape of(const FusedAttentionArgs& args);
  static DecodeShape of(const AttentionSpec& spec);
};

// The kernels' fixed geometry, which the plan's arithmetic depends on (decode_kernel.cuh asserts
// the same numbers).
inline constexpr std::int64_t kDecodeRowsPerCta = 16;   // one m16 MMA tile of packed (head, query) rows
inline constexpr std::int64_t kDecodeMaxSeqQ = 16;
inline constexpr std::int64_t kDecodeMaxRowBlocks = 4;  // CTAs of one (batch, kv head, split) over its rows
inline constexpr std::int64_t kDecodeMinKeys = 512;     // visible keys below which the tile kernels run
inline constexpr std::int64_t kDecodeSplitAlign = 128;  // keys: a split is whole warp tiles of every warp
// 512 keys: 32 warp tiles a CTA, so its prologue and merge stay a small part of its time; and the
// workspace, splits · (D + 1) fp32 a row, stays under one bf16 row of scores (Sk · 2 bytes): the
// trace never shows more extra memory than the S×S matrix the kernel does without.
inline constexpr std::int64_t kDecodeMinKeysPerSplit = 512;
inline constexpr std::int64_t kDecodeMaxSplits = 128;
// The most splits an item merges in a thread block cluster (DecodePlan::merges_in_clusters). On the
// H200 (bench/RESULTS.md), one-CTA-an-SM items of 2 splits merged in clusters took 0.7% less time
// than through the workspace at 8x32/8 seq-k 32768 and 4.5% less at 4096, but items of 4 and 8
// splits 27–65% more: more CTAs than clusters of 4 or 8 fit in the GPCs at once (a GPC holds whole
// clusters only), so some waited for a second wave.
inline constexpr std::int64_t kDecodeMaxClusterSplits = 2;
// Whether a launch of `splits` splits on a geometry built for cluster merges
// (DecodeGeometrySpec::cluster_merge) merges them in clusters: the kernel, its launcher and the plan's
// workspace all ask this.
ATTNPROF_HOST_DEVICE constexpr bool decode_merges_in_clusters(bool geometry_cluster_merge, std::int64_t splits) {
  return geometry_cluster_merge && splits >= 2 && splits <= kDecodeMaxClusterSplits;
}

// The split kernel's geometry (decode_kernel.cuh's DecodeGeometry): warps per CTA, cp.async stages
// per warp, KiB of K and V per warp tile (16 keys at D 128, 32 at D 64 for 8), the CTAs per SM it
// is built for (__launch_bounds__, and the grid rule below), whether its grid is persistent (SMs ×
// CTAs per SM CTAs looping over the work) rather than one CTA per (.., split), the L2 prefetch
// hint of its K/V copies (0, 128 or 256 bytes), and whether an item's splits (2 to
// kDecodeMaxClusterSplits) run as one thread block cluster (compute capability 9.0: the sm_90a
// code) and merge in its first CTA, which reads the others' partial rows from their shared memory,
// rather than through a workspace in global memory and the last CTA to arrive.
struct DecodeGeometrySpec {
  int warps, stages, tile_kib, ctas_per_sm;
  bool persistent;
  int l2_prefetch;
  bool cluster_merge = false;
};
// The two-CTA production geometries, one per head dim (both dtypes; kDecodeGeometry128OneCta below
// is the third): bench/decode_configs times others at D 128. 4 warps × 3 stages × 8 KiB: 100 KiB of shared memory a CTA (98 at D 64).
inline constexpr DecodeGeometrySpec kDecodeGeometry128{4, 3, 8, 2, false, 0};
inline constexpr DecodeGeometrySpec kDecodeGeometry64{4, 3, 8, 2, false, 0};
constexpr DecodeGeometrySpec decode_geometry(std::int64_t head_dim) {
  return head_dim <= 64 ? kDecodeGeometry64 : kDecodeGeometry128;
}
// At D 128, for a grid of at most one CTA an SM: 8 warps × 3 stages × 8 KiB at one CTA an SM (196
// KiB of shared memory; 128 KiB in flight an SM, as two CTAs of kDecodeGeometry128 keep). On the
// H200 (bench/decode_configs, bench/RESULTS.md), 8x32/8 decode at 2 splits on it (128 CTAs on 132
// SMs) against 4 splits on kDecodeGeometry128 (256 CTAs, 2 an SM): seq-k 4096 0.0388 against 0.0404
// ms, 32768 0.2444 against 0.2500, 131072 0.9451 against 0.9521; but 64x32/8 at 8192 (512 CTAs, one
// split) 0.4900 against 0.4826 (both timed with the workspace merge).
// Its items of 2 to kDecodeMaxClusterSplits splits merge in a thread block cluster (decode_kernel.cuh).
inline constexpr DecodeGeometrySpec kDecodeGeometry128OneCta{8, 3, 8, 1, false, 0, true};
// Its shared memory a CTA, dynamic (Q's 16 rows of D 128 bf16, then 8 warps × 3 stages × 8 KiB;
// decode_kernel.cuh's DecodeTraits asserts the same) and static (the kernel's own flag): 196 KiB,
// more than a CTA may take on sm_80 (163 KiB) or sm_86/89 (99 KiB).
inline constexpr std::int64_t kDecodeOneCtaSmemBytes = 16 * 128 * 2 + 8 * 3 * 8 * 1024 + 128;
// One wave: on the H200 (bench/decode_configs, bench/RESULTS.md) the most splits whose CTAs fit one
// wave of 2 CTAs an SM were fastest at every decode shape of issue 21 (8x32/8 at seq-k 4096:
// 4 splits 0.0415 ms against 8 splits 0.0439; 64x32/8 at 8192: 1 split 0.4835 against 2 0.4982).
inline constexpr std::int64_t kDecodeWaves = 1;

// plan_decode's split count rule: the grid it aims at is at most waves × SMs × ctas_per_sm CTAs (a
// value below 1 counts as 1). bench/decode_configs tries others.
struct DecodeGridRule {
  std::int64_t waves = kDecodeWaves;
  std::int64_t ctas_per_sm = 1;
};
// The rule for the head dim's production geometry: kDecodeWaves of its CTAs per SM.
constexpr DecodeGridRule decode_grid_rule(std::int64_t head_dim) {
  return DecodeGridRule{kDecodeWaves, decode_geometry(head_dim).ctas_per_sm};
}

struct DecodePlan {
  int splits = 0;                  // 0: the decode kernels do not run; 1: no merge, each CTA writes O
  int row_blocks = 0;              // CTAs per (batch, kv head, split) along the packed rows
  std::int64_t rows = 0;           // packed rows of one kv head: (heads / kv_heads) · seq_q
  std::int64_t keys = 0;           // keys the last query row sees (all of seq_k unless causal)
  std::int64_t keys_per_split = 0; // a multiple of kDecodeSplitAlign; the last split may hold fewer
  bool one_cta_per_sm = false;     // run kDecodeGeometry128OneCta (head dim 128), not decode_geometry's
  bool runs() const { return splits > 0; }
  // Whether the splits merge in thread block clusters: kDecodeGeometry128OneCta's with 2 to
  // kDecodeMaxClusterSplits splits.
  bool merges_in_clusters() const {
    return one_cta_per_sm && decode_merges_in_clusters(kDecodeGeometry128OneCta.cluster_merge, splits);
  }
  // The fp32 partial outputs and log-sum-exps of every split (0 when splits <= 1 or the splits
  // merge in clusters).
  std::int64_t workspace_bytes(const DecodeShape& shape) const;
  // This plan is decode_plan_with_splits(shape, splits), one_cta_per_sm only at head dim 128: the
  // launcher runs no other.
  bool fits(const DecodeShape& shape) const;
};

// The plan for `shape` with about `splits` splits (clamped to 1..kDecodeMaxSplits; fewer when
// whole 128-key multiples per split leave the last ones empty), whatever the cost model says; no
// plan for a shape the kernels do not take (head dim, seq_q, row blocks, grid). plan_decode's
// arithmetic, and how a test forces a split count.
DecodePlan decode_plan_with_splits(const DecodeShape& shape, std::int64_t splits);

// The cost model: decoding is a read of K and V (B·Hkv·Sk·D·2 elements) with next to no
// arithmetic (16 packed rows per MMA), so the forward is as fast as the bytes in flight keep HBM
// busy. One CTA per (batch, kv head, row block, split) keeps (stages − 1) · 4 warps · 8 KiB = 64 KiB
// of K/V in flight and 2 fit an SM (~100 KiB of shared memory each): H200's 4.8 TB/s at ~1 µs of
// latency needs ~5 MB in flight, ~80 resident CTAs, so one wave of SMs × rule.ctas_per_sm CTAs
// keeps every SM streaming, and longer splits cost less (each split's prologue, its partial row
// written and merged). Equal CTAs run in waves of SMs × ctas_per_sm, and a last wave that is
// mostly empty streams with too few bytes in flight: from the most splits whose CTAs fit
// rule.waves waves (at least one split) to twice as many, the count whose last wave is fullest
// (fewest on a tie); at most kDecodeMaxSplits (the last CTA of a (batch, kv head, row block) merges
// splits × D floats a row) and at least kDecodeMinKeysPerSplit keys each. The decode kernels run when:
// - seq_q is 1..16 and the query heads of one kv head, × seq_q, fill at most kDecodeMaxRowBlocks
//   16-row tiles (each row block reads its K/V again, from L2; more and the 128-row tile
//   kernels' reuse wins);
// - the last query row sees at least kDecodeMinKeys keys (causal top-left with few rows sees few:
//   the tile kernels skip the rest);
// - head_dim is 64 or 128 (the instantiated kernels).
// With one split (the grid already full without splitting) the kernel writes O itself.
DecodePlan plan_decode(const DecodeShape& shape, int sm_count, DecodeGridRule rule);
// flash's plan: plan_decode with decode_grid_rule(shape.head_dim), or at head dim 128, on a device
// whose CTAs may take kDecodeOneCtaSmemBytes of shared memory (smem_per_block: its opt-in limit),
// the plan for one CTA an SM (one_cta_per_sm) when its grid fits one wave of one CTA an SM and fills
// the SMs no less than the two-CTA plan fills its 2 · SMs slots (twice its CTAs at least the
// other's). Measured on the H200 at the 8x32/8 decode shapes of issue 21 (bench/RESULTS.md); other
// shapes it reaches (few columns where the key count caps both plans' splits, several row blocks)
// follow the same arithmetic unmeasured.
DecodePlan plan_decode(const DecodeShape& shape, int sm_count, std::int64_t smem_per_block);

}  // namespace attnprof::cuda
