// `flash` on sm_90a: a FlashAttention-3-shaped forward in plain CUDA + inline PTX (no CUTLASS).
//
// Tiling: one CTA = kBlockM query rows of one (batch, head) × 128-key K/V tiles. D 128: 128 rows,
// 384 threads = consumer warpgroups 0-1 + producer warpgroup 2 (FA3's 128×128). D 64: 192 rows, 512
// threads = consumer warpgroups 0-2 + producer warpgroup 3 (FA3's and ThunderKittens' 192×128: at
// D 64 a tile's softmax costs about as much as its GEMMs, so two warpgroups cannot hide it).
//   - Producer: `setmaxnreg.dec` to 24 registers; one thread issues every TMA load (Q once, then K
//     and V tiles of 128 keys into a 2-stage ring, each stage with a full and an empty mbarrier for
//     K and for V); the other 127 threads exit.
//   - Consumers (64 query rows each): `setmaxnreg.inc` to 240 (2 warpgroups) or 160 (3). Per tile:
//     S = Q·Kᵀ by D/16 wgmma m64n128k16 (both operands in shared memory, 128-byte swizzle); mask
//     (only tiles that cross the causal diagonal or the Sk tail); online softmax in base 2 on the
//     accumulator registers; P packed to bf16/fp16 in registers, which is exactly the A fragment of
//     O += P·V by 8 wgmma m64n{D}k16 in the RS form, V read MN-major (tnspB) from shared memory.
//   - Schedule (FlashKernel::sm90, FA3's): S of tile i+1 and P·V of tile i are issued together and
//     the softmax of tile i+1 runs under that P·V; the consumer warpgroups take turns issuing
//     (pingpong on named barriers; with 3 the turn goes round). FlashKernel::sm90_serial waits for
//     every GEMM before the next step.
//   - Key tiles are visited last to first, so the masked ones come first; tiles wholly above the
//     diagonal are never loaded. Query tiles are ordered longest first (every (batch, head) of the
//     last query block, then the one before): one CTA per tile, or (FlashKernel::sm90_persistent)
//     one CTA per SM striding through that order, its next loads overlapping its epilogue; Q is
//     handed back to the producer through a q_empty mbarrier after each tile's epilogue.
//   - Epilogue: O / row sum written through the warpgroup's own Q rows in shared memory, then
//     16-byte coalesced stores (v7/v8: through an O tile of its own and one TMA store a
//     warpgroup); fp32 LSE straight from registers.
// Shared memory: Q kBlockM·D·2 + 2 stages × (K + V) 128·D·2 = 88 KiB (D 64), 160 KiB (D 128), + 1 KiB
// alignment + barriers; v5/v6 (two Q buffers, 128 rows): 96 KiB (D 64), 192 KiB (D 128); v7/v8 (+ an O
// tile, 3 stages at D 64): 144 KiB (D 64), 224 KiB (D 128); v10 at D 64: + 2 KiB of ones.
// Registers: ptxas reports the entry count, 65536 / threads rounded down to 8 (168 for 384 threads,
// 128 for 512; the register file is 4 banks of 16384, one per SM sub-partition, each holding a
// quarter of the warps), which is what cudaFuncGetAttributes and CUPTI show and what the occupancy
// estimate uses: 168 × 384 = 64512 or 128 × 512 = 65536 registers → 1 CTA per SM (shared memory alone
// would allow 2 at D 64). setmaxnreg then moves registers between roles without changing the
// CTA's total: 24·128 + 240·256 = 64512, 24·128 + 160·384 = 64512 (v7/v8: 32·128 + 232·256 =
// 63488, their producer's tile hand-off needing more than 24). The overlapped D=128 consumer
// needs about 200 (ptxas: no spill at a 200 budget, 144 B spilled at 176), so it depends on the
// 240; see mbarrier_wait_parity (tma.cuh) for the one construct found that silently caps it at 168.
// FLOPs: 4·B·H·Sq·Sk·D (about halved for causal). Bytes: 2·(2·B·H·Sq·D + 2·B·Hkv·Sk·D), plus K/V
// re-read from L2 by every query block.
//
// Versions (H200, bf16 causal, PyTorch 2.11's cuDNN backend and FA2 timed in the same run,
// 2026-11-30, bench/RESULTS.md; TFLOP/s at 8x16x1024x64 / 4x16x4096x64 / 4x16x4096x128 /
// 1x16x16384x128 / 16x32x512x128; ptxas numbers in docs/cuda.md):
//   v1 sm90_serial: producer warpgroup + 2 (D 128) or 3 (D 64) consumer warpgroups, 2 stages, each
//      GEMM waited before the next, non-persistent grid: correct (tests), kept as the fault localiser.
//   v2 sm90: v1 + intra-warpgroup overlap of softmax with P·V + pingpong:
//      223 / 424 / 539 / 657 / 239 (cuDNN via PyTorch 0.94 / 1.02 / 0.95 / 1.05 / 0.83x).
//   v2 sm90_m128 (D 64 on 128 rows): 234 / 388 at the D 64 anchors.
//   v3 sm90_persistent: v2 on one CTA per SM (static round-robin over the longest-first order, not
//      FA3's dynamic LPT scheduler): 232 / 415 / 520 / 589 / 258.
//   v4 sm90_auto: m128 for D 64 up to 2048 rows, persistent for D 128 up to 1024 rows, else v2:
//      the best of the above at every anchor (234 / 424 / 539 / 657 / 258 in that run).
//   v5 sm90_v5: v3 + a second Q buffer (the producer loads tile t+1's Q
//      while tile t runs; v3 loaded it only after t's epilogue, so every tile waited a Q load's
//      latency, about a µs, against 8.6 µs a tile at 16x32x512x128) + snake deal (round robin over
//      the longest-first order leaves the busiest CTA 6% above the mean at 4x16x4096x128: why v3
//      lost to v2 there; snake 0.0%) + head-by-head order where the snake deal stays as even
//      (16x32x512x128, 8x16x1024x64: a head's query blocks run together, so its K/V comes from HBM
//      about once instead of up to 4 times, 335 → 134 MB at 16x32x512x128) + lazy O rescale;
//      128-row CTAs at both head dims. Every kernel: 168 registers (entry), 0 spills.
//      Device call 4: 260 / 396 / 577 / 665 / 310 TFLOP/s (sm90 in the same run: 232 / 425 / 567 /
//      681 / 263; PyTorch's cuDNN 0.060 / 0.332 / 0.474 / 1.739 / 0.097 ms = 0.91 / 0.96 / 0.99 /
//      0.98 / 0.87x of it). sm90_auto now takes v5 for D 64 up to 2048 rows and D 128 up to 4096.
//   v6 sm90_v6 (opt-in): v5's kernel on one CTA per tile (the hardware deals
//      tiles as SMs free up), ordered in L2 sections (pairs whose K and V fit in 16 MiB, longest
//      first within each): v2's dynamic balance with v5's K/V reuse. Device call 4: 222 / 373 /
//      570 / 660 / 239 TFLOP/s: no anchor where it wins.
//   v7 sm90_v7: v5 + a TMA-store epilogue from an O tile of its own (Q released when the main loop
//      ends; the warpgroup leaves the epilogue after its st.shared) + 3 K/V stages at D 64.
//      PyTorch's cuDNN kernels (knob 7, 132 persistent CTAs of 384 threads) hold 134,144 B of
//      shared memory at D 64 and 232,448 at D 128: Q + 3 stages + an O tile, and 2 Q + 2 stages + an
//      O tile. 144 KiB (D 64) / 224 KiB (D 128). Session 4, device call 1: 271 / 412 / 568 / 653 /
//      331 TFLOP/s (v5 260 / 395 / 558 / 646 / 309 in the same run).
//   v8 sm90_v8: v7's kernel with FA3's dynamic scheduler (tiles drawn from a per-stream device
//      counter that the last CTA zeroes again; v6's L2-section order). Its timeline build
//      (FlashSm90V7TimelineTraits: clock reads at each pass's start, Q arrival, main loop end,
//      epilogue end and each Q issue, %globaltimer only at a warpgroup's first start and end;
//      bench/flash_timeline) then showed, per call: the SMs ending 13 µs apart at 8x16x1024x64 on
//      v7's static deal, 3.4 µs on the counter (device call 2: 0.0619 ms, v7 0.0635); a Q in
//      shared memory about 5,900 cycles after its issue, against 4,500 cycles of lead (call 3: an
//      L2 prefetch of the next Q changed nothing; call 4: issuing it as soon as its buffer frees,
//      10,000+ cycles early, left the wait too); the wait was the consumers' integer division of
//      the tile number into batch, head and row (about 850 cycles a pass under the other
//      warpgroup's softmax): the producer now hands them over in shared memory (TileHandoff), and
//      the wait after a warpgroup's first pass fell to about 256 cycles (call 5). The producer
//      needs 32 registers (24 spilled), the consumers keep 232 (ptxas: no spill).
//      Device call 5: 278 / 406 / 601 / 660 / 346 TFLOP/s; PyTorch's cuDNN 0.0604 / 0.3328 / 0.4731
//      / 1.7185 / 0.0996 ms = 0.977 / 0.984 / 1.035 / 1.031 / 1.003x of it (auto: sm90 at the two
//      long anchors, 1.022 / 1.052x). Every kernel: 168 registers (entry), 0 spills.
//   v9 (session 5, removed): v8 with a quarter of P's exp2 on the FMA pipe (Cody-Waite + a cubic)
//      and P packed to bf16 by integer rounding, to take the softmax off MUFU (16 results a clock
//      an SM) and cvt. Device call 1: 264 / 380 / 540 / 586 / 322 TFLOP/s, slower everywhere; the
//      timeline: +192 instructions a thread per key tile cost +187 cycles (D 64) and +335 (D 128)
//      of the main loop. cvt runs at 62 a clock and the replacement exp2 costs 10 issue slots: the
//      softmax is paced by its instruction stream, not by MUFU's rate.
//   v10 sm90_v10: v8's schedule; at D 64 P's row sums from the tensor cores (P·V as m64n72k16 over V
//      and 8 columns of ones: 64 FADDs a thread fewer per key tile; a forward that wants the LSE
//      runs v8's kernel there, the bf16 sum's log being 1.3e-3 off); at both head dims a TMA store
//      per warp of its 16 rows (no named barrier in the epilogue) and rcp.approx. Main loop 2,342
//      cycles a key tile at 8x16x1024x64 (v8 2,391), epilogue 686-800 (v8 1,062); at 4x16x4096x128
//      main loop 2,828 (2,877) and epilogue 1,404 (1,648). Device call 5 (session 5), auto = v10 at
//      the D 64 ≤ 2048 and D 128 ≤ 4096 anchors, sm90 at the others: 290 / 424 / 610 / 678 / 356
//      TFLOP/s; PyTorch's cuDNN 0.0601 / 0.3325 / 0.4727 / 1.7139 / 0.0995 ms = 1.015 / 1.026 /
//      1.049 / 1.057 / 1.030x of it. Every kernel: 168 registers (entry), 0 spills.
#include "cuda/hopper/flash_hopper.h"
#include "cuda/hopper/flash_timeline.h"

#include <attnprof/error.h>
#include <attnprof/tensor.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda/check.h"
#include "cuda/hopper/probes.h"
#include "cuda/hopper/swizzle.h"
#include "cuda/per_device.h"
#include "cuda/hopper/tma.cuh"
#include "cuda/hopper/tma.h"
#include "cuda/hopper/wgmma.cuh"
#include "cuda/hopper/wgmma_instructions.cuh"
#include "cuda/hopper/wgmma_layout.h"
#include "cuda/str_cat.h"

namespace attnprof::cuda::hopper {
// Named (not anonymous) so the sm_80 pass, which compiles the kernel to a trap, does not warn that
// the traits' members are unused.
namespace flash_sm90 {

constexpr float kLog2e = 1.4426950408889634f;
constexpr int kWarpgroupThreads = 128;

constexpr int kMaxStages = 3;
// v7/v8: the query tile a Q buffer holds, as the producer worked it out (its number in the order,
// batch, head, first row), so the consumers do no integer division between tiles (the timeline
// measured about 850 cycles from a warpgroup asking for its next Q, long there, to starting its
// main loop; its key tiles follow from m0 by a division by the constant kBlockN). tile -1: no
// more tiles. One 16-byte shared-memory load.
struct alignas(16) TileHandoff {
  int tile, b, h, m0;
};
struct PipelineBarriers {
  // q_empty: the consumers are done with that Q buffer (and the O staged in it, except in v7).
  // Only v5-v8 use buffer 1: query tile number `done` of a CTA takes buffer done % kQBuffers.
  std::uint64_t q_full[2], q_empty[2];
  std::uint64_t k_full[kMaxStages], k_empty[kMaxStages];
  std::uint64_t v_full[kMaxStages], v_empty[kMaxStages];
  // v7/v8: the query tile each Q buffer holds, written by the producer before it arrives on
  // q_full (so a consumer reads it after its q_full wait): the producer alone decides which tile
  // comes next (v8 draws it from a device counter).
  TileHandoff q_tile[2];
};

// kV5: the v5/v6 kernel: two Q buffers (the producer loads the next query tile's Q while the
// consumers still work on, and stage O in, the current one), O rescaled only when some row of the
// warp changed its max (a row whose max did not change gets rescale exactly 1, where sm90's FFMA
// can give 1 + 1 ulp: v5/v6 may differ from sm90 in the last bit), on a persistent grid a snake
// order (CTA i takes the i-th tile of even waves and the i-th from the end of odd ones, so the CTAs
// that get the longest tile of one wave get the shortest of the next), and the tile order in
// sections of FlashSm90Params::group_heads pairs (section_pairs).
// kTmaStore (v7 = v5 + this): O is staged in a tile of its own and written by TMA stores, so a
// warpgroup releases Q as soon as its main loop ends and leaves the epilogue after its st.shared
// (one thread issues the store and waits for it to have read the tile only before the next
// tile's epilogue); and 3 K/V stages at D 64 (cuDNN's kernels, as PyTorch launches them, hold an
// O staging tile and, at D 64, 3 K/V stages: bench/RESULTS.md, session 3).
// kTimeline: v7 that also records, per consumer warpgroup and query tile, the SM clock at the
// tile's start, once Q is there, at the main loop's end and at the epilogue's end
// (run_flash_timeline_sm90; a separate instantiation, so v7 itself carries no clock reads).
// kV10 (v10 = v8's kernel with these; bench/RESULTS.md, session 5, has what each was measured to do):
//   - D 64, kOnesColumn: P's row sums come from the tensor cores instead of an FADD per element:
//     P·V runs as m64n72k16 over V and 8 columns of ones (2 KiB of shared memory each step's
//     descriptor reaches through its atom stride), so accumulator columns 64-71 hold Σ P of the
//     row, rescaled with O: the sum of the bf16 P that multiplies V (the weights then sum to
//     exactly 1), and the softmax has 64 FADDs a thread fewer per key tile. The LSE needs the fp32
//     sum (the bf16 sum's log is off by up to 1.3e-3): a forward that asks for it runs v8's kernel
//     (keeping both sums behind a branch in the softmax cost 10% of the main loop: call 4).
//   - Each warp stages its 16 rows of O and issues their TMA store itself (16-row boxes): no
//     named barrier in the epilogue. The normaliser is rcp.approx (one MUFU op, not a division).
template <int kHeadDim_, int kConsumerWarpgroups_, bool kV5_, bool kTmaStore_ = false, bool kTimeline_ = false,
          bool kV10_ = false>
struct FlashSm90TraitsOf {
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr bool kTimeline = kTimeline_;
  static constexpr bool kV10 = kV10_;
  static constexpr bool kOnesColumn = kV10 && kHeadDim == 64;
  static constexpr int kStoreRows = kV10 ? 16 : 64;  // rows of a TMA store box of O
  static constexpr int kConsumerWarpgroups = kConsumerWarpgroups_;  // 64 query rows each
  static constexpr bool kV5 = kV5_;
  static constexpr bool kTmaStore = kTmaStore_;
  static constexpr int kQBuffers = kV5 ? 2 : 1;
  static constexpr bool kLazyRescale = kV5;
  static constexpr bool kSnakeOrder = kV5;
  static constexpr int kBlockM = 64 * kConsumerWarpgroups;          // query rows per CTA
  static constexpr int kBlockN = 128;                               // keys per K/V tile
  static constexpr int kConsumerWarps = 4 * kConsumerWarpgroups;
  static constexpr int kConsumerThreads = kWarpgroupThreads * kConsumerWarpgroups;
  static constexpr int kThreads = kConsumerThreads + kWarpgroupThreads;  // + the producer warpgroup
  static constexpr int kEntryRegisters = (65536 / kThreads) / 8 * 8;  // ptxas's count under __launch_bounds__(kThreads, 1)
  static constexpr int kProducerRegisters = kTmaStore ? 32 : 24;
  // What setmaxnreg can give each consumer thread out of the CTA's total: 240 with 2 consumer
  // warpgroups (FA3's 24/240), 160 with 3.
  static constexpr int kConsumerRegisters =
      ((kEntryRegisters * kThreads - kProducerRegisters * kWarpgroupThreads) / kConsumerThreads) / 8 * 8 > 240
          ? 240
          : ((kEntryRegisters * kThreads - kProducerRegisters * kWarpgroupThreads) / kConsumerThreads) / 8 * 8;
  static constexpr int kStages = kTmaStore && kHeadDim == 64 ? 3 : 2;
  static constexpr int kAtoms = kHeadDim / 64;  // 64-column (128-byte) swizzle atoms per row
  static constexpr int kQAtomBytes = kBlockM * 128;
  static constexpr int kKVAtomBytes = kBlockN * 128;
  static constexpr int kQBytes = kAtoms * kQAtomBytes;
  static constexpr int kKVBytes = kAtoms * kKVAtomBytes;  // one K (or V) tile: its expect_tx count
  static constexpr int kSAccumulators = kBlockN / 2;     // m64n128 fp32 per thread
  static constexpr int kOAccumulators = kHeadDim / 2 + (kOnesColumn ? 4 : 0);  // m64n{D} (v10: m64n72)
  static constexpr int kPSteps = kBlockN / 16;           // k16 steps of P·V
  static constexpr int kQKSteps = kHeadDim / 16;         // k16 steps of Q·Kᵀ
  static constexpr int kKOffset = kQBuffers * kQBytes;
  static constexpr int kVOffset = kKOffset + kStages * kKVBytes;
  static constexpr int kOOffset = kVOffset + kStages * kKVBytes;  // v7's O staging tile
  static constexpr int kOnesOffset = kOOffset + (kTmaStore ? kQBytes : 0);  // v10: 16 key rows × 128 B of ones
  static constexpr int kOnesBytes = kOnesColumn ? 16 * 128 : 0;
  static constexpr int kBarrierOffset = kOnesOffset + kOnesBytes;
  static constexpr int kSmemBytes = 1024 /* alignment slack */ + kBarrierOffset + static_cast<int>(sizeof(PipelineBarriers));
  static_assert(kHeadDim % 64 == 0, "whole swizzle atoms");
  static_assert(kStages <= kMaxStages, "PipelineBarriers holds kMaxStages stages");
  static_assert(!kTmaStore || kV5, "the TMA-store epilogue is built on v5");
  static_assert(!kTimeline || kTmaStore, "the timeline build is v7's");
  static_assert(!kV10 || kTmaStore, "v10 is v8's kernel with changes");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA on sm_90");
  static_assert(kProducerRegisters * kWarpgroupThreads + kConsumerRegisters * kConsumerThreads <= kEntryRegisters * kThreads,
                "setmaxnreg can only redistribute the registers the CTA was launched with");
};
// Two names, so the kernels of v1-v4 keep the names they had before v5 (traces, profiles).
template <int kHeadDim, int kConsumerWarpgroups>
struct FlashSm90Traits : FlashSm90TraitsOf<kHeadDim, kConsumerWarpgroups, false> {};
template <int kHeadDim, int kConsumerWarpgroups>
struct FlashSm90V5Traits : FlashSm90TraitsOf<kHeadDim, kConsumerWarpgroups, true> {};
template <int kHeadDim, int kConsumerWarpgroups>
struct FlashSm90V7Traits : FlashSm90TraitsOf<kHeadDim, kConsumerWarpgroups, true, true> {};
template <int kHeadDim, int kConsumerWarpgroups>
struct FlashSm90V7TimelineTraits : FlashSm90TraitsOf<kHeadDim, kConsumerWarpgroups, true, true, true> {};
template <int kHeadDim>
struct FlashSm90V10Traits : FlashSm90TraitsOf<kHeadDim, 2, true, true, false, true> {};
template <int kHeadDim>
struct FlashSm90V10TimelineTraits : FlashSm90TraitsOf<kHeadDim, 2, true, true, true, true> {};

struct FlashSm90Params {
  void* o = nullptr;
  std::int64_t o_stride[3]{};  // batch, head, seq (elements)
  float* lse = nullptr;
  int heads = 0, kv_group = 1, seq_q = 0, seq_k = 0;
  int batch_heads = 0, m_blocks = 0;  // tiles = m_blocks × batch_heads, longest (last m_block) first
  // v5/v6 only: the order runs through sections of group_heads consecutive (batch, head) pairs,
  // longest first within each (batch_heads: one section, the order above).
  int group_heads = 0;
  int causal = 0, causal_offset = 0;
  float softmax_scale = 1.0f, scale_log2 = 1.0f;
  bool q_seq_inner = true, k_seq_inner = true, v_seq_inner = true, o_seq_inner = true;
  // Timeline build only: kTimelineWords words per (query tile in grid order, consumer warpgroup).
  std::uint64_t* timeline = nullptr;
  // v8 (v7's kernel): {next, retired} for the dynamic tile scheduler (tile_counter_for); null: the
  // static snake deal.
  int* tile_counter = nullptr;
  // v8: the producer draws tile t+1 once tile t's Q is out and issues t+1's Q as soon as its
  // buffer is free (v7 stays the static baseline it was measured as).
  bool early_next_q = false;
};

}  // namespace flash_sm90

namespace {

using namespace flash_sm90;

// Number of key tiles the CTA starting at query row m0 must visit (tiles 0 .. n-1): causal rows see
// keys j <= i + causal_offset, so the CTA's last real row bounds them; 0 when no row sees any key.
template <class Tr>
__host__ __device__ __forceinline__ int visible_key_tiles(const FlashSm90Params& p, int m0) {
  int keys = p.seq_k;
  if (p.causal) {
    const int last_row = (m0 + Tr::kBlockM < p.seq_q ? m0 + Tr::kBlockM : p.seq_q) - 1;
    const long long last_visible = static_cast<long long>(last_row) + p.causal_offset;
    keys = last_visible < 0 ? 0 : static_cast<int>(last_visible + 1 < keys ? last_visible + 1 : keys);
  }
  return (keys + Tr::kBlockN - 1) / Tr::kBlockN;
}

// The K/V ring is indexed by a CTA-wide count of key tiles (it runs on across query tiles when the
// grid is persistent): slot g uses stage g % kStages, whose full/empty barriers are in phase
// (g / kStages) & 1.
template <class Tr>
struct RingSlot {
  int stage;
  std::uint32_t phase;
  __host__ __device__ explicit RingSlot(int g) : stage(g % Tr::kStages), phase((g / Tr::kStages) & 1) {}
};

// Query tile `tile` of the grid's order: all (batch, head) pairs of the last query block first.
struct TileCoords {
  int b, h, m0;
};
template <class Tr>
__host__ __device__ __forceinline__ TileCoords tile_coords(const FlashSm90Params& p, int tile) {
  if constexpr (Tr::kV5) {
    // Section `section` holds pairs section·G .. (the last one may be short); its tiles run
    // longest first as above, so the query blocks that re-read a head's K/V run close together.
    const int section = tile / (p.group_heads * p.m_blocks), first_bh = section * p.group_heads;
    const int pairs = p.batch_heads - first_bh < p.group_heads ? p.batch_heads - first_bh : p.group_heads;
    const int in_section = tile - first_bh * p.m_blocks;
    const int m_block = p.m_blocks - 1 - in_section / pairs, bh = first_bh + in_section % pairs;
    return {bh / p.heads, bh % p.heads, m_block * Tr::kBlockM};
  }
  const int m_block = p.m_blocks - 1 - tile / p.batch_heads, bh = tile % p.batch_heads;
  return {bh / p.heads, bh % p.heads, m_block * Tr::kBlockM};
}

// The timeline build's record of one consumer warpgroup's pass over one query tile (host:
// FlashTileTiming): meta (SM << 40 | warpgroup << 32 | key tiles), then the SM clock at the tile's
// start, once its Q is there, at the main loop's end and at the epilogue's end, then the global
// timer (ns) at the start and at the epilogue's end.

#if ATTNPROF_SM90A
__device__ __forceinline__ std::uint64_t global_timer_ns() {
  std::uint64_t ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}
__device__ __forceinline__ std::uint32_t sm_id() {
  std::uint32_t id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}
// Writes word `word` of this warpgroup's record of `tile` (one thread per warpgroup calls it).
template <class Tr>
__device__ __forceinline__ void timeline_mark(const FlashSm90Params& p, int tile, int consumer, int word,
                                              std::uint64_t value) {
  if constexpr (Tr::kTimeline)
    p.timeline[(static_cast<std::int64_t>(tile) * Tr::kConsumerWarpgroups + consumer) * kTimelineWords + word] = value;
}

// The producer's word: the clock when it handed tile `tile`'s Q to the TMA (or, for a tile that
// sees no key, released the consumers), in every consumer warpgroup's record of the tile.
template <class Tr>
__device__ __forceinline__ void timeline_q_issued(const FlashSm90Params& p, int tile, std::uint64_t clock) {
  if constexpr (Tr::kTimeline)
    for (int consumer = 0; consumer < Tr::kConsumerWarpgroups; ++consumer) timeline_mark<Tr>(p, tile, consumer, 8, clock);
}

template <int kRegisters>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}
template <int kRegisters>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}
// Named barrier among `threads` threads (a multiple of 32); id 0 is __syncthreads'.
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// A 16-byte shared-memory record another thread wrote before an mbarrier arrive this thread has
// waited on (the asm keeps the load after the wait, which is asm volatile with a memory clobber).
__device__ __forceinline__ int4 ld_shared_v4_s32(const int* address) {
  int4 value;
  asm volatile("ld.shared.v4.s32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(value.x), "=r"(value.y), "=r"(value.z), "=r"(value.w)
               : "r"(shared_address(address))
               : "memory");
  return value;
}

__device__ __forceinline__ float fast_reciprocal(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

template <class T>
__device__ __forceinline__ std::uint32_t pack_pair(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<std::uint32_t*>(&v);
  } else {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<std::uint32_t*>(&v);
  }
}

// TMA issue helpers (one thread). Each box is 64 columns (one swizzle atom) of kBlockM or kBlockN
// rows; a tile of D columns is D/64 boxes into consecutive atoms, all completing on one barrier.
template <class Tr>
__device__ __forceinline__ void load_q(const CUtensorMap& q_map, bool seq_inner, unsigned char* smem,
                                       std::uint64_t* full, int b, int h, int m0) {
  mbarrier_arrive_expect_tx(full, Tr::kQBytes);
#pragma unroll
  for (int atom = 0; atom < Tr::kAtoms; ++atom)
    tma_load_attention_box(smem + atom * Tr::kQAtomBytes, q_map, seq_inner, full, atom * 64, m0, h, b,
                           kCacheEvictFirst);
}
template <class Tr>
__device__ __forceinline__ void load_kv_tile(unsigned char* tile, const CUtensorMap& map, bool seq_inner,
                                             std::uint64_t* full, int b, int kv_h, int key0) {
  mbarrier_arrive_expect_tx(full, Tr::kKVBytes);
#pragma unroll
  for (int atom = 0; atom < Tr::kAtoms; ++atom)
    tma_load_attention_box(tile + atom * Tr::kKVAtomBytes, map, seq_inner, full, atom * 64, key0, kv_h, b,
                           kCacheEvictLast);
}

// The query tile a CTA takes in its `wave`-th round (wave 0 only when there is a CTA per tile).
template <class Tr>
__device__ __forceinline__ int cta_tile(int wave) {
  const int ctas = static_cast<int>(gridDim.x), cta = static_cast<int>(blockIdx.x);
  return wave * ctas + (Tr::kSnakeOrder && (wave & 1) != 0 ? ctas - 1 - cta : cta);
}

// The CTA's query tile number `done` (its first is blockIdx.x either way). Static (v5-v7): the
// snake deal. Dynamic (v8, a tile counter): the next tile of the order not yet taken by any CTA,
// so a CTA that drew short tiles takes more of them (FA3's scheduler; longest first within each L2
// section makes it longest-processing-time-first greedy).
template <class Tr>
__device__ __forceinline__ int next_tile(const FlashSm90Params& p, int done) {
  if constexpr (Tr::kTmaStore)  // v7's kernel only: the others keep the producer's registers as they were
    if (p.tile_counter != nullptr) return atomicAdd(p.tile_counter, 1) + static_cast<int>(gridDim.x);
  return cta_tile<Tr>(done);
}

// Once a CTA has drawn past the last tile it draws no more; the last CTA to get there sets the
// counter back to zero for the next launch on the stream (kernels on one stream never overlap), so
// a forward needs no memset. The fence orders this CTA's last draw before its retirement.
__device__ __forceinline__ void retire_tile_counter(int* counter) {
  __threadfence();
  if (atomicAdd(counter + 1, 1) == static_cast<int>(gridDim.x) - 1) {
    atomicExch(counter, 0);
    atomicExch(counter + 1, 0);
  }
}

// One thread, for each query tile of this CTA: Q (once the consumers are done with the Q buffer's
// previous tile and the O staged in it), then K and V of key tiles n-1 .. 0 into the ring. A stage is refilled
// only after every consumer warp released it. First rounds pass because a fresh barrier counts as
// having completed the phase before phase 0.
template <class Tr>
__device__ __forceinline__ void produce(const CUtensorMap& q_map, const CUtensorMap& k_map, const CUtensorMap& v_map,
                                        const FlashSm90Params& p, unsigned char* smem, PipelineBarriers& bars) {
  tma_prefetch_map(q_map);
  tma_prefetch_map(k_map);
  tma_prefetch_map(v_map);
  const int tiles = p.m_blocks * p.batch_heads;
  // Hands tile `tile` (at `t`, visiting n_tiles key tiles) to the consumers in `buffer`, whose
  // q_empty phase has completed: its coordinates (v7/v8), then its Q's TMA load, or for a tile
  // that sees no key an arrive alone.
  auto hand_q = [&](int tile, const TileCoords& t, int n_tiles, int buffer) {
    if constexpr (Tr::kTmaStore) bars.q_tile[buffer] = TileHandoff{tile, t.b, t.h, t.m0};
    if constexpr (Tr::kTimeline) timeline_q_issued<Tr>(p, tile, clock64());
    if (n_tiles == 0)
      mbarrier_arrive(&bars.q_full[buffer]);  // nothing to load: release the consumers at once
    else
      load_q<Tr>(q_map, p.q_seq_inner, smem + buffer * Tr::kQBytes, &bars.q_full[buffer], t.b, t.h, t.m0);
  };
  const bool early_q = Tr::kTmaStore && p.early_next_q;
  bool q_handed = false;  // early_q: this tile's Q went out during the previous tile's loads
  int slot = 0;
  for (int done = 0, tile = cta_tile<Tr>(0);; ++done) {
    const int q_buffer = done % Tr::kQBuffers;
    const std::uint32_t q_phase = (done / Tr::kQBuffers) & 1;
    if (tile >= tiles) {
      if constexpr (Tr::kTmaStore) {  // tell the consumers there is no next tile
        mbarrier_wait_parity(&bars.q_empty[q_buffer], q_phase ^ 1);
        bars.q_tile[q_buffer].tile = -1;
        mbarrier_arrive(&bars.q_full[q_buffer]);
        if (p.tile_counter != nullptr) retire_tile_counter(p.tile_counter);
      }
      return;
    }
    const TileCoords t = tile_coords<Tr>(p, tile);
    const int n_tiles = visible_key_tiles<Tr>(p, t.m0), kv_h = t.h / p.kv_group, slot0 = slot;
    auto load = [&](int it, bool is_k) {  // key tile n_tiles-1-it into ring slot slot0 + it
      const RingSlot<Tr> r(slot0 + it);
      mbarrier_wait_parity(is_k ? &bars.k_empty[r.stage] : &bars.v_empty[r.stage], r.phase ^ 1);
      load_kv_tile<Tr>(smem + (is_k ? Tr::kKOffset : Tr::kVOffset) + r.stage * Tr::kKVBytes, is_k ? k_map : v_map,
                       is_k ? p.k_seq_inner : p.v_seq_inner, is_k ? &bars.k_full[r.stage] : &bars.v_full[r.stage], t.b,
                       kv_h, (n_tiles - 1 - it) * Tr::kBlockN);
    };
    // The first K tile goes before the wait for Q, so it lands while the previous tile's epilogue
    // runs (its stage was released in an earlier main loop: this wait never depends on Q).
    if (n_tiles > 0) load(0, true);
    if (!q_handed) {
      // A buffer's two Q barriers go through one phase per tile it holds, blind tiles (no key
      // visible) included: the consumers stage a blind tile's zeros in Q too, and wait on q_full
      // for it, so they can never be two q_empty phases ahead of this thread (the parity only
      // tells consecutive phases apart).
      mbarrier_wait_parity(&bars.q_empty[q_buffer], q_phase ^ 1);
      hand_q(tile, t, n_tiles, q_buffer);
    }
    q_handed = false;
    // v8 draws the next tile now and hands its Q out as soon as its buffer is free (the end of the
    // previous tile's main loop), polled between this tile's K/V loads: the timeline measured
    // about 5,900 cycles from a Q's issue to the consumers seeing it, more than the 4,500 of lead
    // that issuing it after this tile's loads gave. Others draw after the loads.
    int next = tiles;
    if (early_q) next = next_tile<Tr>(p, done + 1);
    const int next_buffer = (done + 1) % Tr::kQBuffers;
    const std::uint32_t next_phase = ((done + 1) / Tr::kQBuffers) & 1;
    for (int it = 0; it < n_tiles; ++it) {
      if (it > 0) load(it, true);
      if (early_q && !q_handed && next < tiles && mbarrier_phase_done<false>(&bars.q_empty[next_buffer], next_phase ^ 1)) {
        const TileCoords n = tile_coords<Tr>(p, next);
        hand_q(next, n, visible_key_tiles<Tr>(p, n.m0), next_buffer);
        q_handed = true;
      }
      load(it, false);
    }
    slot += n_tiles;
    if (!early_q) next = next_tile<Tr>(p, done + 1);
    tile = next;
  }
}

// -inf where key col is past Sk or (causal) past row + causal_offset. Accumulator register
// 4j + 2i + e holds row lane/4 + 8i of the warp's 16, column 8j + 2·(lane%4) + e of the tile.
template <class Tr>
__device__ __forceinline__ void mask_scores(float (&s)[Tr::kSAccumulators], const FlashSm90Params& p, int warp_row0,
                                            int key0, int lane) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const int row = warp_row0 + lane / 4 + 8 * i;
    int limit = p.seq_k;  // first key this row may not see
    if (p.causal) limit = min(limit, row + p.causal_offset + 1);
    const int first_col = key0 + 2 * (lane % 4);
#pragma unroll
    for (int j = 0; j < Tr::kBlockN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        if (first_col + 8 * j + e >= limit) s[4 * j + 2 * i + e] = -INFINITY;
  }
}

// Online softmax of one tile: new running max per row (the 4 lanes of a quad share a row), the
// running sum rescaled, S replaced by P = exp2(S·c − max·c), c = softmax_scale·log2 e. O must be
// multiplied by `rescale` before the next P·V is added (rescale_o), which the overlapped schedule
// does only once the previous P·V has retired.
template <class Tr>
__device__ __forceinline__ void online_softmax(float (&s)[Tr::kSAccumulators], float (&row_max)[2],
                                               float (&row_sum)[2], float (&rescale)[2], float scale_log2) {
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float mx = row_max[i];
#pragma unroll
    for (int j = 0; j < Tr::kBlockN / 8; ++j) mx = fmaxf(mx, fmaxf(s[4 * j + 2 * i], s[4 * j + 2 * i + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    // A row that has seen no visible key keeps max -inf: use 0 so exp2 gives 0, not NaN.
    const float max_scaled = mx == -INFINITY ? 0.0f : mx * scale_log2;
    // Lazy (v5/v6): exactly 1 when the max did not change (the FFMA below would give exp2 of its
    // rounding error, not always 1), so rescale_o can be skipped.
    rescale[i] = Tr::kLazyRescale && mx == row_max[i] ? 1.0f : fast_exp2(row_max[i] * scale_log2 - max_scaled);
    row_max[i] = mx;
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < Tr::kBlockN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float prob = fast_exp2(s[4 * j + 2 * i + e] * scale_log2 - max_scaled);
        s[4 * j + 2 * i + e] = prob;
        if constexpr (!Tr::kOnesColumn) sum += prob;  // v10 at D 64: the P·V GEMM sums the row
      }
    // This thread's columns; the quad is summed at the end.
    if constexpr (!Tr::kOnesColumn) row_sum[i] = row_sum[i] * rescale[i] + sum;
  }
}

template <class Tr>
__device__ __forceinline__ void rescale_o(float (&o)[Tr::kOAccumulators], const float (&rescale)[2]) {
#pragma unroll
  for (int j = 0; j < Tr::kOAccumulators / 4; ++j)  // v10: the ones column's row sums too
#pragma unroll
    for (int v = 0; v < 4; ++v) o[4 * j + v] *= rescale[v / 2];
}

// P (fp32 in the S registers) → the A fragments of the P·V k16 steps (wgmma_layout.h).
template <class Tr, class T>
__device__ __forceinline__ void pack_p(std::uint32_t (&p_frag)[Tr::kPSteps][4], const float (&s)[Tr::kSAccumulators]) {
#pragma unroll
  for (int step = 0; step < Tr::kPSteps; ++step)
#pragma unroll
    for (int r = 0; r < 4; ++r)
      p_frag[step][r] = pack_pair<T>(s[rs_a_source_accumulator(step, r, 0)], s[rs_a_source_accumulator(step, r, 1)]);
}

template <class Tr, class T>
__device__ __forceinline__ void pv_wgmma(float (&o)[Tr::kOAccumulators], const std::uint32_t (&a)[4],
                                         std::uint64_t v_desc) {
  if constexpr (Tr::kOnesColumn)
    wgmma_rs_m64n72k16_tb<T>(o, a, v_desc);
  else if constexpr (Tr::kHeadDim == 64)
    wgmma_rs_m64n64k16_tb<T>(o, a, v_desc);
  else
    wgmma_rs_m64n128k16_tb<T>(o, a, v_desc);
}

// What one consumer warpgroup needs to issue its GEMMs: 64 query rows from m0 + 64·consumer, in
// Q buffer q_buffer.
template <class Tr>
struct ConsumerView {
  int consumer, warp, lane, wg_row0, warp_row0;
  std::uint32_t q_base, k_base, v_base, ones_base;
  __device__ ConsumerView(unsigned char* smem, int m0, int q_buffer = 0) {
    const int t = static_cast<int>(threadIdx.x) % kWarpgroupThreads;
    consumer = static_cast<int>(threadIdx.x) / kWarpgroupThreads;
    warp = t / 32;
    lane = t % 32;
    wg_row0 = m0 + 64 * consumer;
    warp_row0 = wg_row0 + 16 * warp;
    q_base = shared_address(smem) + q_buffer * Tr::kQBytes + consumer * 64 * 128;  // its 64 rows of each Q atom
    k_base = shared_address(smem + Tr::kKOffset);
    v_base = shared_address(smem + Tr::kVOffset);
    ones_base = shared_address(smem + Tr::kOnesOffset);
  }
};

// Issues S = Q·Kᵀ[stage] (scale-d 0 on the first k-step drops the previous tile's P) and commits it.
template <class Tr, class T>
__device__ __forceinline__ void issue_qk(float (&s)[Tr::kSAccumulators], const ConsumerView<Tr>& c, int stage) {
  wgmma_fence(s);
#pragma unroll
  for (int ks = 0; ks < Tr::kQKSteps; ++ks) {
    const std::uint32_t k_step = (ks % 4) * 32u;  // +32 B per k16 step inside an atom
    wgmma_ss_m64n128k16<T>(s, sw128_kmajor_descriptor(c.q_base + (ks / 4) * Tr::kQAtomBytes + k_step),
                           sw128_kmajor_descriptor(c.k_base + stage * Tr::kKVBytes + (ks / 4) * Tr::kKVAtomBytes + k_step),
                           ks > 0);
  }
  wgmma_commit_group();
}

// Issues O += P·V[stage] and commits it.
template <class Tr, class T>
__device__ __forceinline__ void issue_pv(float (&o)[Tr::kOAccumulators], const std::uint32_t (&p_frag)[Tr::kPSteps][4],
                                         const ConsumerView<Tr>& c, int stage) {
  wgmma_fence(o);  // after the rescale and the P packing (ordinary register writes)
#pragma unroll
  for (int step = 0; step < Tr::kPSteps; ++step) {
    const std::uint32_t v_rows = c.v_base + stage * Tr::kKVBytes + step * 16 * 128;
    // v10: the atom after V's one (columns 64-71) is the ones, wherever the step's 16 rows start.
    pv_wgmma<Tr, T>(o, p_frag[step],
                    sw128_mnmajor_descriptor(v_rows, Tr::kOnesColumn ? c.ones_base - v_rows : Tr::kKVAtomBytes));
  }
  wgmma_commit_group();
}

template <class Tr>
__device__ __forceinline__ void mask_if_needed(float (&s)[Tr::kSAccumulators], const FlashSm90Params& p,
                                               const ConsumerView<Tr>& c, int key0) {
  const bool crosses_diagonal = p.causal && key0 + Tr::kBlockN - 1 > c.wg_row0 + p.causal_offset;
  if (key0 + Tr::kBlockN > p.seq_k || crosses_diagonal) mask_scores<Tr>(s, p, c.warp_row0, key0, c.lane);
}

// Pingpong between the consumer warpgroups (FA3's warp scheduler barriers): a warpgroup issues
// its GEMMs only while holding the token, then passes it, so one warpgroup's softmax runs while
// the other's GEMMs own the tensor cores; with 3 warpgroups the turn goes round. Barrier 8 + w is
// warpgroup w's (256 threads: its own 128 syncing, the previous warpgroup's 128 arriving).
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
constexpr int kFirstTurnBarrier = 8;  // 1 .. kConsumerWarpgroups are the epilogue's
__device__ __forceinline__ void take_gemm_turn(int consumer) {
  named_barrier_sync(kFirstTurnBarrier + consumer, 2 * kWarpgroupThreads);
}
template <class Tr>
__device__ __forceinline__ void pass_gemm_turn(int consumer) {
  named_barrier_arrive(kFirstTurnBarrier + (consumer + 1) % Tr::kConsumerWarpgroups, 2 * kWarpgroupThreads);
}

// Schedule v1: each GEMM waited before the next step (the warpgroups overlap only by chance).
template <class Tr, class T>
__device__ __forceinline__ void mainloop_serial(float (&o)[Tr::kOAccumulators], float (&row_max)[2],
                                                float (&row_sum)[2], const FlashSm90Params& p, PipelineBarriers& bars,
                                                const ConsumerView<Tr>& c, int n_tiles, int slot0) {
  float s[Tr::kSAccumulators];
#pragma unroll
  for (int v = 0; v < Tr::kSAccumulators; ++v) s[v] = 0.0f;
  std::uint32_t p_frag[Tr::kPSteps][4];
  for (int it = 0; it < n_tiles; ++it) {
    const RingSlot<Tr> r(slot0 + it);
    const int stage = r.stage;
    const std::uint32_t phase = r.phase;
    const int key0 = (n_tiles - 1 - it) * Tr::kBlockN;
    mbarrier_wait_parity(&bars.k_full[stage], phase);
    issue_qk<Tr, T>(s, c, stage);
    wgmma_wait_group<0>(s);
    if (c.lane == 0) mbarrier_arrive(&bars.k_empty[stage]);  // this warp no longer reads K[stage]
    mask_if_needed<Tr>(s, p, c, key0);
    float rescale[2];
    online_softmax<Tr>(s, row_max, row_sum, rescale, p.scale_log2);
    rescale_o<Tr>(o, rescale);
    pack_p<Tr, T>(p_frag, s);
    mbarrier_wait_parity(&bars.v_full[stage], phase);
    issue_pv<Tr, T>(o, p_frag, c, stage);
    wgmma_wait_group<0>(o);
#pragma unroll
    for (int step = 0; step < Tr::kPSteps; ++step) pin_registers(p_frag[step]);
    if (c.lane == 0) mbarrier_arrive(&bars.v_empty[stage]);
  }
}

// Schedule v2 (FA3's): S(i+1) = Q·K(i+1)ᵀ and O += P(i)·V(i) are issued together, the softmax of
// tile i+1 runs while P(i)·V(i) is still on the tensor cores, and O is rescaled only after that
// GEMM retires; the warpgroups take turns issuing (pingpong). V(i) is released one step later
// than K(i), as the producer expects (it loads them in that order anyway).
template <class Tr, class T>
__device__ __forceinline__ void mainloop_overlapped(float (&o)[Tr::kOAccumulators], float (&row_max)[2],
                                                    float (&row_sum)[2], const FlashSm90Params& p,
                                                    PipelineBarriers& bars, const ConsumerView<Tr>& c, int n_tiles,
                                                    int slot0) {
  float s[Tr::kSAccumulators];
#pragma unroll
  for (int v = 0; v < Tr::kSAccumulators; ++v) s[v] = 0.0f;
  std::uint32_t p_frag[Tr::kPSteps][4];
  float rescale[2];
  if (c.consumer == 0) named_barrier_arrive(kFirstTurnBarrier, 2 * kWarpgroupThreads);  // warpgroup 0 goes first

  // Tile 0 (the last key tile, so the masked one).
  const RingSlot<Tr> first(slot0);
  mbarrier_wait_parity(&bars.k_full[first.stage], first.phase);
  take_gemm_turn(c.consumer);
  issue_qk<Tr, T>(s, c, first.stage);
  pass_gemm_turn<Tr>(c.consumer);
  wgmma_wait_group<0>(s);
  if (c.lane == 0) mbarrier_arrive(&bars.k_empty[first.stage]);
  mask_if_needed<Tr>(s, p, c, (n_tiles - 1) * Tr::kBlockN);
  online_softmax<Tr>(s, row_max, row_sum, rescale, p.scale_log2);  // O is still 0: no rescale
  pack_p<Tr, T>(p_frag, s);

  for (int it = 1; it < n_tiles; ++it) {
    const RingSlot<Tr> r(slot0 + it), prev(slot0 + it - 1);
    const int stage = r.stage, prev_stage = prev.stage;
    const std::uint32_t phase = r.phase, prev_phase = prev.phase;
    const int key0 = (n_tiles - 1 - it) * Tr::kBlockN;
    mbarrier_wait_parity(&bars.k_full[stage], phase);
    take_gemm_turn(c.consumer);
    issue_qk<Tr, T>(s, c, stage);
    mbarrier_wait_parity(&bars.v_full[prev_stage], prev_phase);
    issue_pv<Tr, T>(o, p_frag, c, prev_stage);
    pass_gemm_turn<Tr>(c.consumer);
    wgmma_wait_group<1>(s);  // S(it) has retired; P(it-1)·V(it-1) may still run
    if (c.lane == 0) mbarrier_arrive(&bars.k_empty[stage]);
    mask_if_needed<Tr>(s, p, c, key0);
    online_softmax<Tr>(s, row_max, row_sum, rescale, p.scale_log2);
    wgmma_wait_group<0>(o);
#pragma unroll
    for (int step = 0; step < Tr::kPSteps; ++step) pin_registers(p_frag[step]);
    if (c.lane == 0) mbarrier_arrive(&bars.v_empty[prev_stage]);
    // Lazy (v5/v6): a row whose max did not change has rescale exactly 1 (online_softmax), so
    // skip the multiplication when no row of the warp changed; the vote keeps it warp-uniform.
    if (!Tr::kLazyRescale || __any_sync(0xffffffffu, rescale[0] != 1.0f || rescale[1] != 1.0f))
      rescale_o<Tr>(o, rescale);
    pack_p<Tr, T>(p_frag, s);
  }

  const RingSlot<Tr> last(slot0 + n_tiles - 1);
  const int last_stage = last.stage;
  mbarrier_wait_parity(&bars.v_full[last_stage], last.phase);
  take_gemm_turn(c.consumer);
  issue_pv<Tr, T>(o, p_frag, c, last_stage);
  pass_gemm_turn<Tr>(c.consumer);
  wgmma_wait_group<0>(o);
#pragma unroll
  for (int step = 0; step < Tr::kPSteps; ++step) pin_registers(p_frag[step]);
  if (c.lane == 0) mbarrier_arrive(&bars.v_empty[last_stage]);
  // The last warpgroup's last pass left 128 arrivals on warpgroup 0's barrier: consume them, so
  // every barrier ends with no phase half done. (Letting the turn run on across tiles instead,
  // so that warpgroup 0 need not wait here for warpgroup 1's last issue, made v10's main loop 6%
  // slower per key tile: bench/RESULTS.md, session 5, call 3.)
  if (c.consumer == 0) take_gemm_turn(0);
}

// One consumer warpgroup, one query tile: the main loop, then the epilogue. `done` counts this
// CTA's earlier query tiles (the Q buffer and its barriers' phase), `slot0` its earlier key tiles
// (the ring slot). v7/v8 (kTmaStore) come in with Q already there (consume waited for it to learn
// the tile); `begin` is the clock before that wait (timeline build).
template <class Tr, class T, bool kOverlap>
__device__ __forceinline__ void consume_tile(const CUtensorMap& o_map, const FlashSm90Params& p, unsigned char* smem,
                                             PipelineBarriers& bars, int b, int h, int m0, int n_tiles, int done,
                                             int slot0, int tile, std::uint64_t begin) {
  const int q_buffer = done % Tr::kQBuffers;
  const std::uint32_t q_phase = (done / Tr::kQBuffers) & 1;
  const ConsumerView<Tr> c(smem, m0, q_buffer);
  const int t = static_cast<int>(threadIdx.x) % kWarpgroupThreads;
  float o[Tr::kOAccumulators];
#pragma unroll
  for (int v = 0; v < Tr::kOAccumulators; ++v) o[v] = 0.0f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.0f, 0.0f};
  if constexpr (!Tr::kTmaStore)
    mbarrier_wait_parity(&bars.q_full[q_buffer], q_phase);  // also for a blind tile: keeps the Q phases in step
  if constexpr (Tr::kTimeline)
    if (t == 0) {
      timeline_mark<Tr>(p, tile, c.consumer, 0,
                        (static_cast<std::uint64_t>(sm_id()) << 40) | (static_cast<std::uint64_t>(c.consumer) << 32) |
                            static_cast<std::uint32_t>(n_tiles));
      timeline_mark<Tr>(p, tile, c.consumer, 1, begin);
      timeline_mark<Tr>(p, tile, c.consumer, 2, clock64());
    }
  if (n_tiles > 0) {
    if constexpr (kOverlap)
      mainloop_overlapped<Tr, T>(o, row_max, row_sum, p, bars, c, n_tiles, slot0);
    else
      mainloop_serial<Tr, T>(o, row_max, row_sum, p, bars, c, n_tiles, slot0);
  }

  if constexpr (Tr::kTimeline)
    if (t == 0) timeline_mark<Tr>(p, tile, c.consumer, 3, clock64());
  if constexpr (Tr::kTmaStore) {
    // This warp's wgmmas have all retired (the main loop waited for each): Q can go back to the
    // producer now. The O tile is free once this warpgroup's previous TMA store has read it.
    __syncwarp();
    if (c.lane == 0) mbarrier_arrive(&bars.q_empty[q_buffer]);
    if constexpr (Tr::kV10) {  // each warp stores its own 16 rows: its own previous store must have read them
      if (c.lane == 0) bulk_wait_group_read();
      __syncwarp();
    } else if (t == 0) {
      bulk_wait_group_read();
    }
  }
  // Epilogue. Every warp of this warpgroup must be past its last wgmma reading Q before its rows of
  // the Q tile are overwritten with O (v7: past the wait for the O tile; v10 needs no barrier).
  if constexpr (!Tr::kV10) named_barrier_sync(1 + c.consumer, kWarpgroupThreads);
  const std::uint32_t staging =
      shared_address(smem) + (Tr::kTmaStore ? static_cast<int>(Tr::kOOffset) : q_buffer * Tr::kQBytes);
  T* out = static_cast<T*>(p.o) + b * p.o_stride[0] + h * p.o_stride[1];
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    float sum = row_sum[i];
    if constexpr (Tr::kOnesColumn) {
      sum = o[Tr::kHeadDim / 2 + 2 * i];  // column 64 of the row: the sum of the bf16 P that multiplied V
    } else {
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    }
    // A row that sees no key comes out as zeros.
    const float inv = sum > 0.0f ? (Tr::kV10 ? fast_reciprocal(sum) : 1.0f / sum) : 0.0f;
    const int row = c.warp_row0 + c.lane / 4 + 8 * i;
    if constexpr (!Tr::kOnesColumn)  // the launcher sends a forward that wants the LSE to v8 at D 64
      if (p.lse != nullptr && c.lane % 4 == 0 && row < p.seq_q)
        p.lse[(static_cast<std::int64_t>(b) * p.heads + h) * p.seq_q + row] =
            sum > 0.0f ? row_max[i] * p.softmax_scale + logf(sum) : -INFINITY;
    const int tile_row = row - m0;
#pragma unroll
    for (int j = 0; j < Tr::kHeadDim / 8; ++j) {
      const std::uint32_t addr = staging + (j / 8) * Tr::kQAtomBytes + swizzle128_chunk_offset(tile_row, j % 8) +
                                 4 * (c.lane % 4);
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(pack_pair<T>(o[4 * j + 2 * i] * inv, o[4 * j + 2 * i + 1] * inv))
                   : "memory");
    }
  }
  if constexpr (Tr::kTmaStore) {
    // One TMA store box of kStoreRows rows: a warpgroup's 64 (v7/v8, issued by its thread 0 once
    // every warp has staged its rows) or a warp's 16 (v10, issued by its lane 0).
    fence_proxy_async_shared();  // this thread's st.shared, before the TMA store reads them
    if constexpr (Tr::kV10)
      __syncwarp();
    else
      named_barrier_sync(1 + c.consumer, kWarpgroupThreads);
    if (Tr::kV10 ? c.lane == 0 : t == 0) {
      const int staged_row = Tr::kV10 ? 64 * c.consumer + 16 * c.warp : c.consumer * 64;
      const int first_row = Tr::kV10 ? c.warp_row0 : c.wg_row0;
#pragma unroll
      for (int atom = 0; atom < Tr::kAtoms; ++atom)
        tma_store_attention_box(smem + Tr::kOOffset + atom * Tr::kQAtomBytes + staged_row * 128, o_map,
                                p.o_seq_inner, atom * 64, first_row, h, b);
      bulk_commit_group();
      if constexpr (Tr::kTimeline)
        if (t == 0) timeline_mark<Tr>(p, tile, c.consumer, 4, clock64());
    }
    return;
  }
  named_barrier_sync(1 + c.consumer, kWarpgroupThreads);
  constexpr int kChunksPerRow = Tr::kHeadDim / 8;
  for (int i = t; i < 64 * kChunksPerRow; i += kWarpgroupThreads) {
    const int local_row = i / kChunksPerRow, chunk = i % kChunksPerRow;
    const int row = c.wg_row0 + local_row;
    if (row >= p.seq_q) continue;
    uint4 value;
    const std::uint32_t addr =
        staging + (chunk / 8) * Tr::kQAtomBytes + swizzle128_chunk_offset(64 * c.consumer + local_row, chunk % 8);
    asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(value.x), "=r"(value.y), "=r"(value.z), "=r"(value.w)
                 : "r"(addr)
                 : "memory");
    *reinterpret_cast<uint4*>(out + row * p.o_stride[2] + chunk * 8) = value;
  }
  __syncwarp();  // every lane's shared-memory reads are done before the warp frees the Q tile
  if (c.lane == 0) mbarrier_arrive(&bars.q_empty[q_buffer]);
}

// One consumer warpgroup: every query tile of this CTA (one, unless the grid is persistent).
template <class Tr, class T, bool kOverlap>
__device__ __forceinline__ void consume(const CUtensorMap& o_map, const FlashSm90Params& p, unsigned char* smem,
                                        PipelineBarriers& bars) {
  const int tiles = p.m_blocks * p.batch_heads;
  int slot = 0;
  if constexpr (Tr::kTmaStore) {
    // The producer names each tile in shared memory (PipelineBarriers::q_tile): read it once Q is there.
    const bool recorder = Tr::kTimeline && threadIdx.x % kWarpgroupThreads == 0;
    int last_tile = -1;
    std::uint64_t first_begin_ns = 0;
    for (int done = 0;; ++done) {
      const int q_buffer = done % Tr::kQBuffers;
      const std::uint64_t begin = recorder ? clock64() : 0;
      // The lane's global-timer anchors (timeline build): read at its first start and its end
      // only, since a %globaltimer read costs hundreds of cycles; the host places the other
      // clocks between them.
      if (recorder && done == 0) first_begin_ns = global_timer_ns();
      mbarrier_wait_parity(&bars.q_full[q_buffer], (done / Tr::kQBuffers) & 1);
      // Lane 0 reads it (the lane that later arrives on q_empty, so the read is ordered before the
      // producer's next write by program order alone) and hands it to the warp.
      int4 coords = make_int4(0, 0, 0, 0);
      if (threadIdx.x % 32 == 0) coords = ld_shared_v4_s32(&bars.q_tile[q_buffer].tile);
      const int tile = __shfl_sync(0xffffffffu, coords.x, 0);
      if (tile < 0) {
        if constexpr (Tr::kTimeline)
          if (recorder && last_tile >= 0) {
            const int consumer = static_cast<int>(threadIdx.x) / kWarpgroupThreads;
            timeline_mark<Tr>(p, last_tile, consumer, 7, clock64());
            timeline_mark<Tr>(p, last_tile, consumer, 6, global_timer_ns());
          }
        break;
      }
      const int b = __shfl_sync(0xffffffffu, coords.y, 0), h = __shfl_sync(0xffffffffu, coords.z, 0);
      const int m0 = __shfl_sync(0xffffffffu, coords.w, 0);
      const int n_tiles = visible_key_tiles<Tr>(p, m0);
      consume_tile<Tr, T, kOverlap>(o_map, p, smem, bars, b, h, m0, n_tiles, done, slot, tile, begin);
      if constexpr (Tr::kTimeline)
        if (recorder && done == 0)
          timeline_mark<Tr>(p, tile, static_cast<int>(threadIdx.x) / kWarpgroupThreads, 5, first_begin_ns);
      slot += n_tiles;
      last_tile = tile;
    }
    // The last TMA store must be done before the CTA (and its shared memory) goes away (v10: each
    // warp's own).
    if (threadIdx.x % (Tr::kV10 ? 32 : kWarpgroupThreads) == 0) bulk_wait_group_all();
  } else {
    for (int done = 0, tile = cta_tile<Tr>(0); tile < tiles; tile = cta_tile<Tr>(++done)) {
      const TileCoords t = tile_coords<Tr>(p, tile);
      const int n_tiles = visible_key_tiles<Tr>(p, t.m0);
      consume_tile<Tr, T, kOverlap>(o_map, p, smem, bars, t.b, t.h, t.m0, n_tiles, done, slot, tile, 0);
      slot += n_tiles;
    }
  }
}
#endif  // ATTNPROF_SM90A

template <class Tr, class T, bool kOverlap>
__global__ void __launch_bounds__(Tr::kThreads, 1)
    flash_forward_sm90_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                              const __grid_constant__ CUtensorMap v_map, const __grid_constant__ CUtensorMap o_map,
                              const FlashSm90Params p) {
#if ATTNPROF_SM90A
  extern __shared__ unsigned char smem_raw[];
  // Swizzle atoms must start on 1024-byte boundaries (swizzle.h); the launch adds 1 KiB of slack.
  unsigned char* smem = smem_raw + (1024u - shared_address(smem_raw) % 1024u) % 1024u;
  PipelineBarriers& bars = *reinterpret_cast<PipelineBarriers*>(smem + Tr::kBarrierOffset);

  if (threadIdx.x == 0) {
    for (int buffer = 0; buffer < Tr::kQBuffers; ++buffer) {
      mbarrier_init(&bars.q_full[buffer], 1);
      mbarrier_init(&bars.q_empty[buffer], Tr::kConsumerWarps);
    }
    for (int stage = 0; stage < Tr::kStages; ++stage) {
      mbarrier_init(&bars.k_full[stage], 1);
      mbarrier_init(&bars.v_full[stage], 1);
      mbarrier_init(&bars.k_empty[stage], Tr::kConsumerWarps);
      mbarrier_init(&bars.v_empty[stage], Tr::kConsumerWarps);
    }
    fence_mbarrier_init();
  }
  if constexpr (Tr::kOnesColumn) {  // v10: 1.0 in bf16 or fp16, read by every P·V wgmma
    const std::uint32_t one_pair = std::is_same_v<T, __half> ? 0x3C003C00u : 0x3F803F80u;
    for (int i = static_cast<int>(threadIdx.x); i < Tr::kOnesBytes / 4; i += Tr::kThreads)
      reinterpret_cast<std::uint32_t*>(smem + Tr::kOnesOffset)[i] = one_pair;
    fence_proxy_async_shared();
  }
  __syncthreads();

  // Warpgroups 0 .. kConsumerWarpgroups-1 consume, the last one produces: one branch each of a
  // single if/else, on a value made visibly warp-uniform by the shuffle (as CUTLASS does; ptxas
  // 13.0 gives the same allocation without it). setmaxnreg needs every warp of the warpgroup.
  const int warpgroup = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / kWarpgroupThreads, 0);
  if (warpgroup == Tr::kConsumerWarpgroups) {
    setmaxnreg_dec<Tr::kProducerRegisters>();
    if (threadIdx.x == Tr::kConsumerThreads) produce<Tr>(q_map, k_map, v_map, p, smem, bars);
  } else {
    setmaxnreg_inc<Tr::kConsumerRegisters>();
    if constexpr (Tr::kTmaStore)
      if (threadIdx.x == 0) tma_prefetch_map(o_map);
    consume<Tr, T, kOverlap>(o_map, p, smem, bars);
  }
#else
  (void)q_map, (void)k_map, (void)v_map, (void)o_map, (void)p;
  __trap();
#endif
}

// SMs of the current device, asked once per device.
int multiprocessor_count() {
  static PerDevice<int> counts;
  return counts.get([](int device) {
    if (device < 0) ATTNPROF_CUDA_CHECK(cudaGetDevice(&device));  // throws naming the failure
    int count = 0;
    ATTNPROF_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
    return count;
  });
}

// The fields tile_coords and visible_key_tiles read.
template <class Tr>
void fill_tile_fields(FlashSm90Params& p, const FusedAttentionArgs& a) {
  p.heads = static_cast<int>(a.heads);
  p.seq_q = static_cast<int>(a.seq_q);
  p.seq_k = static_cast<int>(a.seq_k);
  p.causal = a.causal ? 1 : 0;
  p.causal_offset = static_cast<int>(a.causal ? a.causal_offset : 0);
  p.batch_heads = static_cast<int>(a.batch * a.heads);
  p.m_blocks = static_cast<int>((a.seq_q + Tr::kBlockM - 1) / Tr::kBlockM);
}

// The busiest CTA's work when `ctas` persistent CTAs take the tiles in snake order (cta_tile) with
// sections of `group_heads` pairs: Σ (2·key tiles + 1) over its tiles (the 1: a tile's prologue
// and epilogue, about half a key tile's time).
template <class Tr>
long long busiest_cta_load(FlashSm90Params p, int group_heads, long long ctas) {
  p.group_heads = group_heads;
  const long long tiles = static_cast<long long>(p.batch_heads) * p.m_blocks;
  std::vector<long long> load(static_cast<std::size_t>(ctas), 0);
  for (long long tile = 0; tile < tiles; ++tile) {
    const long long wave = tile / ctas, position = tile % ctas;
    const long long cta = (wave & 1) != 0 ? ctas - 1 - position : position;
    load[static_cast<std::size_t>(cta)] +=
        2 * visible_key_tiles<Tr>(p, tile_coords<Tr>(p, static_cast<int>(tile)).m0) + 1;
  }
  return *std::max_element(load.begin(), load.end());
}

// L2 bytes a section of the v6 order may fill with K and V (H200: 50 MB of L2; the rest holds the
// next section's first tiles and the streaming Q and O).
constexpr long long kL2SectionBytes = 16ll << 20;
// v5 simulates its static assignment (busiest_cta_load) up to this many tiles per launch.
constexpr long long kMaxSimulatedTiles = 1ll << 16;

// FlashSm90Params::group_heads for a kernel of the v5 traits. v6 (l2_sections): as many pairs as
// fit their K and V (2 bytes an element) in kL2SectionBytes, counting a GQA group's shared K/V once
// per query head (conservative). v5 (persistent): 1, i.e. head by head (every query block of a head
// runs within a wave or two, so its K/V is read from HBM about once), when the snake deal of that
// order leaves the busiest CTA within 1% of the one the longest-first order gives; else
// longest first over the whole grid (which snake deals evenly, but whose query blocks of a head
// run waves apart: at 1x16x16384x128 head-major leaves the busiest CTA 54% above the mean).
template <class Tr>
int section_pairs(const FlashSm90Params& p, const FusedAttentionArgs& a, long long ctas, bool persistent,
                  bool l2_sections) {
  if (l2_sections) {
    const long long kv_bytes_per_pair = 4ll * a.seq_k * a.head_dim;
    return static_cast<int>(std::clamp<long long>(kL2SectionBytes / std::max(kv_bytes_per_pair, 1ll), 1, p.batch_heads));
  }
  if (!Tr::kV5 || !persistent || static_cast<long long>(p.batch_heads) * p.m_blocks > kMaxSimulatedTiles)
    return p.batch_heads;
  // The simulation costs up to a few ms of host time at kMaxSimulatedTiles: remembered per problem
  // shape, so a benchmark's repeated launches pay it once.
  using Key = std::array<long long, 8>;
  const Key key{Tr::kHeadDim, Tr::kBlockM, p.batch_heads, p.m_blocks, p.seq_q, p.seq_k,
                p.causal != 0 ? 1ll + p.causal_offset + (1ll << 32) : 0, ctas};
  static std::mutex mutex;
  static std::map<Key, int> answers;
  std::lock_guard<std::mutex> lock(mutex);
  if (const auto found = answers.find(key); found != answers.end()) return found->second;
  if (answers.size() > 4096) answers.clear();  // bounded: a long run over many shapes
  const int pairs =
      100 * busiest_cta_load<Tr>(p, 1, ctas) <= 101 * busiest_cta_load<Tr>(p, p.batch_heads, ctas) ? 1 : p.batch_heads;
  answers.emplace(key, pairs);
  return pairs;
}

template <class Tr, class T, bool kOverlap>
void launch_typed(const FusedAttentionArgs& a, cudaStream_t stream, bool persistent, bool l2_sections = false,
                  std::uint64_t* timeline = nullptr, int* tile_counter = nullptr) {
  const CUtensorMapDataType element = std::is_same_v<T, __half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                                : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const auto b = static_cast<std::uint64_t>(a.batch), d = static_cast<std::uint64_t>(a.head_dim);
  const AttentionTileMap q = make_attention_tile_map(a.q, element, b, static_cast<std::uint64_t>(a.heads),
                                                     static_cast<std::uint64_t>(a.seq_q), d, a.q_stride[0],
                                                     a.q_stride[1], a.q_stride[2], Tr::kBlockM);
  const AttentionTileMap k = make_attention_tile_map(a.k, element, b, static_cast<std::uint64_t>(a.kv_heads),
                                                     static_cast<std::uint64_t>(a.seq_k), d, a.k_stride[0],
                                                     a.k_stride[1], a.k_stride[2], Tr::kBlockN);
  const AttentionTileMap v = make_attention_tile_map(a.v, element, b, static_cast<std::uint64_t>(a.kv_heads),
                                                     static_cast<std::uint64_t>(a.seq_k), d, a.v_stride[0],
                                                     a.v_stride[1], a.v_stride[2], Tr::kBlockN);
  // v7 stores O through a map of 64-row boxes (one consumer warpgroup's rows); the others pass Q's
  // map in that slot, unused, so their O needs no TMA alignment.
  const AttentionTileMap o = Tr::kTmaStore ? make_attention_tile_map(a.o, element, b, static_cast<std::uint64_t>(a.heads),
                                                                     static_cast<std::uint64_t>(a.seq_q), d, a.o_stride[0],
                                                                     a.o_stride[1], a.o_stride[2], Tr::kStoreRows)
                                           : q;
  FlashSm90Params p;
  p.o = a.o;
  for (int i = 0; i < 3; ++i) p.o_stride[i] = a.o_stride[i];
  p.o_seq_inner = o.seq_inner;
  p.timeline = timeline;
  p.tile_counter = tile_counter;
  p.early_next_q = tile_counter != nullptr;  // v8: the counter and the next Q issued early
  p.lse = a.lse;
  fill_tile_fields<Tr>(p, a);
  p.kv_group = static_cast<int>(a.heads / a.kv_heads);
  p.softmax_scale = a.softmax_scale;
  p.scale_log2 = a.softmax_scale * kLog2e;
  p.q_seq_inner = q.seq_inner;
  p.k_seq_inner = k.seq_inner;
  p.v_seq_inner = v.seq_inner;

  auto kernel = flash_forward_sm90_kernel<Tr, T, kOverlap>;
  static PerDevice<bool> configured;  // the attribute is per device: once, not on every forward
  configured.get([&](int) {
    ATTNPROF_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes));
    return true;
  });
  // One CTA per query tile, longest first; or (persistent) one per SM, each striding through the
  // tiles in that order, so a CTA's next Q/K/V loads overlap its epilogue.
  const long long tiles = static_cast<long long>(p.batch_heads) * p.m_blocks;
  const long long ctas = persistent ? std::min<long long>(tiles, multiprocessor_count()) : tiles;
  p.group_heads = section_pairs<Tr>(p, a, ctas, persistent, l2_sections);
  kernel<<<static_cast<unsigned>(ctas), Tr::kThreads, Tr::kSmemBytes, stream>>>(q.map, k.map, v.map, o.map, p);
  ATTNPROF_CUDA_CHECK_LAUNCH("flash_forward_sm90_kernel");
}

// v8's tile counter for launches on `stream` of the current device: two ints, zeroed once (in
// stream order) and set back to zero by each launch's last CTA (retire_tile_counter). One per
// stream because launches on one stream never overlap, while two streams' launches may; kept for
// the process (8 bytes a stream).
int* tile_counter_for(cudaStream_t stream) {
  int device = 0;
  ATTNPROF_CUDA_CHECK(cudaGetDevice(&device));
  static std::mutex mutex;
  static std::map<std::pair<int, cudaStream_t>, int*> counters;
  std::lock_guard<std::mutex> lock(mutex);
  int*& counter = counters[{device, stream}];
  if (counter == nullptr) {
    void* memory = nullptr;
    ATTNPROF_CUDA_CHECK(cudaMalloc(&memory, 2 * sizeof(int)));
    ATTNPROF_CUDA_CHECK(cudaMemsetAsync(memory, 0, 2 * sizeof(int), stream));
    counter = static_cast<int*>(memory);
  }
  return counter;
}

// The kernel's two GEMMs alone, for run_flash_gemm_probe: one consumer warpgroup (consumer 0 of
// the kernel's traits) issues S = Q·Kᵀ and O = P·V exactly as the main loop does (same helpers,
// same shared-memory layout and descriptors, same TMA loads), with P taken from memory instead of a
// softmax, and writes S and O out through the accumulator layout.
template <class Tr, class T>
__global__ void __launch_bounds__(kWarpgroupThreads, 1)
    flash_gemm_probe_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                            const __grid_constant__ CUtensorMap v_map, const FlashSm90Params p,
                            const std::uint16_t* p_matrix, float* s_out, float* o_out) {
#if ATTNPROF_SM90A
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = smem_raw + (1024u - shared_address(smem_raw) % 1024u) % 1024u;
  PipelineBarriers& bars = *reinterpret_cast<PipelineBarriers*>(smem + Tr::kBarrierOffset);
  if (threadIdx.x == 0) {
    mbarrier_init(&bars.q_full[0], 1);
    mbarrier_init(&bars.k_full[0], 1);
    mbarrier_init(&bars.v_full[0], 1);
    fence_mbarrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    load_q<Tr>(q_map, p.q_seq_inner, smem, &bars.q_full[0], 0, 0, 0);
    load_kv_tile<Tr>(smem + Tr::kKOffset, k_map, p.k_seq_inner, &bars.k_full[0], 0, 0, 0);
    load_kv_tile<Tr>(smem + Tr::kVOffset, v_map, p.v_seq_inner, &bars.v_full[0], 0, 0, 0);
  }
  mbarrier_wait_parity(&bars.q_full[0], 0);
  mbarrier_wait_parity(&bars.k_full[0], 0);
  mbarrier_wait_parity(&bars.v_full[0], 0);
  const ConsumerView<Tr> c(smem, 0);
  const int t = static_cast<int>(threadIdx.x);

  float s[Tr::kSAccumulators];
#pragma unroll
  for (int v = 0; v < Tr::kSAccumulators; ++v) s[v] = __int_as_float(0x7fc00000);  // scale-d 0 must drop it
  issue_qk<Tr, T>(s, c, 0);
  wgmma_wait_group<0>(s);
#pragma unroll
  for (int v = 0; v < Tr::kSAccumulators; ++v) s_out[accumulator_row(t, v) * Tr::kBlockN + accumulator_col(t, v)] = s[v];

  std::uint32_t p_frag[Tr::kPSteps][4];
#pragma unroll
  for (int step = 0; step < Tr::kPSteps; ++step)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int row = rs_a_row(t, r), col = 16 * step + rs_a_col(t, r, 0);
      p_frag[step][r] = static_cast<std::uint32_t>(p_matrix[row * Tr::kBlockN + col]) |
                        (static_cast<std::uint32_t>(p_matrix[row * Tr::kBlockN + col + 1]) << 16);
    }
  float o[Tr::kOAccumulators];
#pragma unroll
  for (int v = 0; v < Tr::kOAccumulators; ++v) o[v] = 0.0f;
  issue_pv<Tr, T>(o, p_frag, c, 0);
  wgmma_wait_group<0>(o);
#pragma unroll
  for (int step = 0; step < Tr::kPSteps; ++step) pin_registers(p_frag[step]);
#pragma unroll
  for (int v = 0; v < Tr::kOAccumulators; ++v) o_out[accumulator_row(t, v) * Tr::kHeadDim + accumulator_col(t, v)] = o[v];
#else
  (void)q_map, (void)k_map, (void)v_map, (void)p, (void)p_matrix, (void)s_out, (void)o_out;
  __trap();
#endif
}

template <class Tr>
void launch_gemm_probe(float* s_out, float* o_out, const void* q, const void* k, const void* v,
                       const std::uint16_t* p_matrix, cudaStream_t stream) {
  // One (batch, head) of 128 rows × D, contiguous: the kernel's own map builder and box sizes.
  const std::int64_t d = Tr::kHeadDim;
  auto map = [&](const void* data, std::uint32_t box_rows) {
    return make_attention_tile_map(data, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 1, 1, 128, static_cast<std::uint64_t>(d),
                                   128 * d, 128 * d, d, box_rows);
  };
  const AttentionTileMap q_map = map(q, Tr::kBlockM), k_map = map(k, Tr::kBlockN), v_map = map(v, Tr::kBlockN);
  FlashSm90Params p;
  p.q_seq_inner = q_map.seq_inner;
  p.k_seq_inner = k_map.seq_inner;
  p.v_seq_inner = v_map.seq_inner;
  auto kernel = flash_gemm_probe_kernel<Tr, __nv_bfloat16>;
  ATTNPROF_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tr::kSmemBytes));
  kernel<<<1, kWarpgroupThreads, Tr::kSmemBytes, stream>>>(q_map.map, k_map.map, v_map.map, p, p_matrix, s_out, o_out);
  ATTNPROF_CUDA_CHECK_LAUNCH("flash_gemm_probe_kernel");
}

// hopper_unavailable_reason() for the current device, asked once per device: it costs four
// runtime calls, and launch_flash_attention asks on every forward.
std::optional<std::string> current_device_not_hopper() {
  static PerDevice<std::optional<std::string>> answers;
  return answers.get([](int) { return hopper_unavailable_reason(); });
}

}  // namespace

FlashKernel flash_kernel_choice() {
  const char* kernel = std::getenv("ATTNPROF_FLASH_KERNEL");
  const std::string want = kernel == nullptr ? "" : kernel;
  if (!want.empty() && want != "sm80" && want != "sm90" && want != "sm90-m128" && want != "sm90-persistent" &&
      want != "sm90-serial" && want != "sm90-v5" && want != "sm90-v6" && want != "sm90-v7" && want != "sm90-v8" &&
      want != "sm90-v10")
    throw UsageError(str_cat("ATTNPROF_FLASH_KERNEL=", want,
                             ": allowed sm80 (the mma.sync kernel), sm90 (wgmma + TMA, compute capability 9.0), "
                             "sm90-m128 (the same with 128-row tiles at D 64), sm90-persistent (one CTA per SM), "
                             "sm90-serial (without GEMM/softmax overlap), sm90-v5 (persistent, Q double-buffered, "
                             "lazy rescale), sm90-v6 (v5's kernel, one CTA per tile), sm90-v7 (v5 with a TMA-store "
                             "epilogue and 3 K/V stages at D 64), sm90-v8 (v7 with tiles drawn from a counter), sm90-v10 "
                             "(v8 with P's row sums from the tensor cores at D 64), or unset"));
  if (want == "sm80") return FlashKernel::sm80;
  if (want.empty()) {
    const char* config = std::getenv("ATTNPROF_FLASH_CONFIG");  // a tiling of the sm80 kernel
    if (config != nullptr && std::atoi(config) != 0) return FlashKernel::sm80;
  }
  const auto why = current_device_not_hopper();
  if (!want.empty() && why) throw UsageError(str_cat("ATTNPROF_FLASH_KERNEL=", want, ": ", *why));
  if (why) return FlashKernel::sm80;
  if (want == "sm90-serial") return FlashKernel::sm90_serial;
  if (want == "sm90-m128") return FlashKernel::sm90_m128;
  if (want == "sm90-persistent") return FlashKernel::sm90_persistent;
  if (want == "sm90-v5") return FlashKernel::sm90_v5;
  if (want == "sm90-v6") return FlashKernel::sm90_v6;
  if (want == "sm90-v7") return FlashKernel::sm90_v7;
  if (want == "sm90-v8") return FlashKernel::sm90_v8;
  if (want == "sm90-v10") return FlashKernel::sm90_v10;
  if (want == "sm90") return FlashKernel::sm90;
  return FlashKernel::sm90_auto;
}

FlashKernel auto_flash_kernel(std::int64_t head_dim, std::int64_t seq_q) {
  if (head_dim == 64) return seq_q <= 2048 ? FlashKernel::sm90_v10 : FlashKernel::sm90;
  return seq_q <= 4096 ? FlashKernel::sm90_v10 : FlashKernel::sm90;
}

void launch_flash_attention_sm90(const FusedAttentionArgs& args, cudaStream_t stream, FlashKernel schedule) {
  if (args.dtype != DType::bf16 && args.dtype != DType::fp16)
    throw UsageError(str_cat("dtype ", dtype_name(args.dtype), ": the fused GPU kernels take bf16 or fp16"));
  if (args.head_dim != 64 && args.head_dim != 128)
    throw UsageError(str_cat("head_dim ", args.head_dim, ": the fused GPU kernels take 64 or 128"));
  if (schedule == FlashKernel::sm80) throw Error("launch_flash_attention_sm90: asked for the sm80 kernel");
  if (schedule == FlashKernel::sm90_auto) schedule = auto_flash_kernel(args.head_dim, args.seq_q);
  // v10's ones column sums the bf16 P, whose log is no LSE: a forward that wants one runs v8 at D 64.
  if (schedule == FlashKernel::sm90_v10 && args.head_dim == 64 && args.lse != nullptr) schedule = FlashKernel::sm90_v8;
  if (auto why = current_device_not_hopper()) throw Error(str_cat("flash_forward_sm90: ", *why));
  // Tiles are numbered by one int (grid.x ≤ 2^31 − 1); row and key indices stay in int too.
  if (args.batch * args.heads * ((args.seq_q + 63) / 64) > 0x7fffffffll || args.seq_q > (1ll << 30) ||
      args.seq_k > (1ll << 30) || args.causal_offset > (1ll << 30) || args.causal_offset < -(1ll << 30))
    throw Error("flash_forward_sm90: the problem exceeds the kernel's grid");
  const bool fp16 = args.dtype == DType::fp16;
  using D64 = FlashSm90Traits<64, 3>;
  using D64M128 = FlashSm90Traits<64, 2>;
  using D128 = FlashSm90Traits<128, 2>;
  const bool persistent = schedule == FlashKernel::sm90_persistent;
  using D64V5 = FlashSm90V5Traits<64, 2>;  // 128 rows: the D 64 gap to cuDNN is at short sequences
  using D128V5 = FlashSm90V5Traits<128, 2>;
  switch (schedule) {
    case FlashKernel::sm90_v10: {  // v8's schedule
      int* counter = tile_counter_for(stream);
      if (args.head_dim == 64)
        fp16 ? launch_typed<FlashSm90V10Traits<64>, __half, true>(args, stream, true, true, nullptr, counter)
             : launch_typed<FlashSm90V10Traits<64>, __nv_bfloat16, true>(args, stream, true, true, nullptr, counter);
      else
        fp16 ? launch_typed<FlashSm90V10Traits<128>, __half, true>(args, stream, true, true, nullptr, counter)
             : launch_typed<FlashSm90V10Traits<128>, __nv_bfloat16, true>(args, stream, true, true, nullptr, counter);
      return;
    }
    case FlashKernel::sm90_v7:    // v5's grid and order, TMA-store epilogue
    case FlashKernel::sm90_v8: {  // the same kernel, tiles drawn from a counter in L2 sections
      const bool v8 = schedule == FlashKernel::sm90_v8;
      int* counter = v8 ? tile_counter_for(stream) : nullptr;
      if (args.head_dim == 64)
        fp16 ? launch_typed<FlashSm90V7Traits<64, 2>, __half, true>(args, stream, true, v8, nullptr, counter)
             : launch_typed<FlashSm90V7Traits<64, 2>, __nv_bfloat16, true>(args, stream, true, v8, nullptr, counter);
      else
        fp16 ? launch_typed<FlashSm90V7Traits<128, 2>, __half, true>(args, stream, true, v8, nullptr, counter)
             : launch_typed<FlashSm90V7Traits<128, 2>, __nv_bfloat16, true>(args, stream, true, v8, nullptr, counter);
      return;
    }
    case FlashKernel::sm90_v5:  // persistent, snake order over the longest-first order
    case FlashKernel::sm90_v6: {  // one CTA per tile, L2 sections
      const bool v5 = schedule == FlashKernel::sm90_v5;
      if (args.head_dim == 64)
        fp16 ? launch_typed<D64V5, __half, true>(args, stream, v5, !v5)
             : launch_typed<D64V5, __nv_bfloat16, true>(args, stream, v5, !v5);
      else
        fp16 ? launch_typed<D128V5, __half, true>(args, stream, v5, !v5)
             : launch_typed<D128V5, __nv_bfloat16, true>(args, stream, v5, !v5);
      return;
    }
    case FlashKernel::sm90_serial:
      if (args.head_dim == 64)
        fp16 ? launch_typed<D64, __half, false>(args, stream, false)
             : launch_typed<D64, __nv_bfloat16, false>(args, stream, false);
      else
        fp16 ? launch_typed<D128, __half, false>(args, stream, false)
             : launch_typed<D128, __nv_bfloat16, false>(args, stream, false);
      return;
    case FlashKernel::sm90_m128:
      if (args.head_dim == 64) {
        fp16 ? launch_typed<D64M128, __half, true>(args, stream, false)
             : launch_typed<D64M128, __nv_bfloat16, true>(args, stream, false);
        return;
      }
      [[fallthrough]];  // D 128 already runs 128-row tiles
    default:
      if (args.head_dim == 64)
        fp16 ? launch_typed<D64, __half, true>(args, stream, persistent)
             : launch_typed<D64, __nv_bfloat16, true>(args, stream, persistent);
      else
        fp16 ? launch_typed<D128, __half, true>(args, stream, persistent)
             : launch_typed<D128, __nv_bfloat16, true>(args, stream, persistent);
      return;
  }
}

int flash_v5_section_pairs(const FusedAttentionArgs& args, FlashKernel schedule, int multiprocessors) {
  if (schedule != FlashKernel::sm90_v5 && schedule != FlashKernel::sm90_v6)
    throw Error("flash_v5_section_pairs: only sm90_v5 and sm90_v6 order their tiles in sections");
  if ((args.head_dim != 64 && args.head_dim != 128) || multiprocessors < 1)
    throw Error(str_cat("flash_v5_section_pairs: head_dim ", args.head_dim, ", ", multiprocessors, " SMs"));
  auto pairs = [&](auto traits) {
    using Tr = decltype(traits);
    FlashSm90Params p;
    fill_tile_fields<Tr>(p, args);
    const long long tiles = static_cast<long long>(p.batch_heads) * p.m_blocks;
    const bool v5 = schedule == FlashKernel::sm90_v5;
    return section_pairs<Tr>(p, args, v5 ? std::min<long long>(tiles, multiprocessors) : tiles, v5, !v5);
  };
  return args.head_dim == 64 ? pairs(FlashSm90V5Traits<64, 2>{}) : pairs(FlashSm90V5Traits<128, 2>{});
}

std::vector<FlashTileTiming> run_flash_timeline_sm90(const FusedAttentionArgs& args, cudaStream_t stream,
                                                     FlashKernel schedule) {
  if (schedule != FlashKernel::sm90_v7 && schedule != FlashKernel::sm90_v8 && schedule != FlashKernel::sm90_v10)
    throw Error("run_flash_timeline_sm90: the timeline build is v7's kernel (sm90_v7, sm90_v8's counter, or sm90_v10)");
  if (args.dtype != DType::bf16)
    throw UsageError(str_cat("dtype ", dtype_name(args.dtype), ": the flash timeline build takes bf16"));
  if (args.head_dim != 64 && args.head_dim != 128)
    throw UsageError(str_cat("head_dim ", args.head_dim, ": the flash timeline build takes 64 or 128"));
  if (auto why = current_device_not_hopper()) throw Error(str_cat("run_flash_timeline_sm90: ", *why));
  constexpr int kConsumers = 2;
  const std::int64_t tiles = args.batch * args.heads * ((args.seq_q + 127) / 128);  // 128-row CTAs at both head dims
  if (tiles > 0x7fffffffll) throw Error("run_flash_timeline_sm90: the problem exceeds the kernel's grid");
  const std::size_t words = static_cast<std::size_t>(tiles) * kConsumers * kTimelineWords;
  // 8-byte words in a device tensor (freed in stream order); zeros mark what was never written.
  const Tensor device_words = Tensor::empty({static_cast<std::int64_t>(words)}, DType::fp64, Device::cuda);
  auto* records = static_cast<std::uint64_t*>(device_words.raw());
  ATTNPROF_CUDA_CHECK(cudaMemsetAsync(records, 0, words * sizeof(std::uint64_t), stream));
  const bool counter_schedule = schedule != FlashKernel::sm90_v7;
  int* counter = counter_schedule ? tile_counter_for(stream) : nullptr;
  if (schedule == FlashKernel::sm90_v10 && args.head_dim == 64) {
    if (args.lse != nullptr)  // the forward sends such a call to v8's kernel; the timeline build would skip it
      throw Error("run_flash_timeline_sm90: sm90_v10's D 64 kernel writes no LSE; time it without one");
    launch_typed<FlashSm90V10TimelineTraits<64>, __nv_bfloat16, true>(args, stream, true, true, records, counter);
  } else if (schedule == FlashKernel::sm90_v10) {
    launch_typed<FlashSm90V10TimelineTraits<128>, __nv_bfloat16, true>(args, stream, true, true, records, counter);
  } else if (args.head_dim == 64) {
    launch_typed<FlashSm90V7TimelineTraits<64, kConsumers>, __nv_bfloat16, true>(args, stream, true, counter_schedule,
                                                                                 records, counter);
  } else {
    launch_typed<FlashSm90V7TimelineTraits<128, kConsumers>, __nv_bfloat16, true>(args, stream, true, counter_schedule,
                                                                                  records, counter);
  }
  std::vector<std::uint64_t> host(words);
  ATTNPROF_CUDA_CHECK(
      cudaMemcpyAsync(host.data(), records, words * sizeof(std::uint64_t), cudaMemcpyDeviceToHost, stream));
  ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
  return decode_flash_timeline(host, kConsumers);
}

void run_flash_gemm_probe(float* s_out, float* o_out, const void* q, const void* k, const void* v,
                          const std::uint16_t* p_matrix, int head_dim, cudaStream_t stream) {
  if (auto why = hopper_unavailable_reason()) throw Error(str_cat("run_flash_gemm_probe: ", *why));
  if (head_dim == 64)
    launch_gemm_probe<FlashSm90Traits<64, 3>>(s_out, o_out, q, k, v, p_matrix, stream);
  else if (head_dim == 128)
    launch_gemm_probe<FlashSm90Traits<128, 2>>(s_out, o_out, q, k, v, p_matrix, stream);
  else
    throw Error(str_cat("run_flash_gemm_probe: head_dim ", head_dim, " (64 or 128)"));
}

}  // namespace attnprof::cuda::hopper
