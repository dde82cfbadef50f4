#pragma once
// `flash` on sm_90a: a FlashAttention-3-shaped forward in plain CUDA + inline PTX (no CUTLASS),
// split by role as FlashAttention-3's hopper/ is: this file (kernel traits: tile sizes, shared
// memory layout, register split, the kernel's parameters), flash_tile_scheduler.cuh (which query
// tile a CTA takes next), flash_producer.cuh (the TMA loads), flash_mainloop.cuh (one consumer
// warpgroup's GEMMs and online softmax), flash_epilogue.cuh (O out), flash_kernel.cuh (the kernel
// entry and the consumers' tile loop), flash_launch.cuh (the host launch of one instantiation),
// flash_dispatch.cu (the one translation unit: which instantiation runs) and flash_heuristics.h
// (the automatic schedule choice).
//
// Tiling: one CTA = kBlockM query rows of one (batch, head) × kBlockN-key K/V tiles, at a kernel
// head dim of 64, 96, 128, 192 or 256 (FA3's specialisations). D 128: 128 rows, 384 threads = consumer
// warpgroups 0-1 + producer warpgroup 2 (FA3's 128×128). D 64: 192 rows, 512 threads = consumer
// warpgroups 0-2 + producer warpgroup 3 (FA3's and ThunderKittens' 192×128: at D 64 a tile's softmax
// costs about as much as its GEMMs, so two warpgroups cannot hide it); the tile-counter kernels run
// 128 rows at both head dims. D 96: 128×128; D 192: 128×112; D 256: 128×80 (FA3's forward tiles on
// H100; kBlockN shrinks so that Q and two stages of K and V fit 227 KiB), 2 consumer warpgroups,
// 2 stages, one CTA per query tile only.
// A head dim that is a multiple of 8 but no specialisation runs on the next larger one
// (flash_sm90_kernel_head_dim): the TMA maps carry the tensors' D as the innermost extent and the
// boxes are the kernel's, so columns past D load as zeros (adding nothing to Q·Kᵀ, giving zero
// columns of O) and TMA stores past D are clipped; the other epilogue writes only D's 8-column
// chunks (FlashSm90Params::head_dim), and the softmax scale is the caller's (1/√D of the real D).
// D 96 is stored as two 64-column swizzle atoms, the second half used: Q·Kᵀ runs 6 k16 steps, P·V
// m64n96 reads the first 32 columns of V's second atom.
//   - Producer: `setmaxnreg.dec` to 24 registers (32 with the TMA-store epilogue); one thread issues
//     every TMA load (Q, then K and V tiles of kBlockN keys into a 2- or 3-stage ring, each stage with
//     a full and an empty mbarrier for K and for V); the other 127 threads exit.
//   - Consumers (64 query rows each): `setmaxnreg.inc` to 240 (2 warpgroups) or 160 (3). Per tile:
//     S = Q·Kᵀ by D/16 wgmma m64n{kBlockN}k16 (both operands in shared memory, 128-byte swizzle);
//     mask (only tiles that cross the causal diagonal or the Sk tail); online softmax in base 2 on
//     the accumulator registers; P packed to bf16/fp16 in registers, which is exactly the A fragment
//     of O += P·V by kBlockN/16 wgmma m64n{D}k16 in the RS form, V read MN-major (tnspB) from shared
//     memory.
//   - Schedule (FA3's): S of tile i+1 and P·V of tile i are issued together and the softmax of tile
//     i+1 runs under that P·V; the consumer warpgroups take turns issuing (pingpong on named
//     barriers; with 3 the turn goes round).
//   - Key tiles are visited last to first, so the masked ones come first; tiles wholly above the
//     diagonal are never loaded. Query tiles are ordered longest first (flash_tile_scheduler.cuh).
//   - Epilogue: O / row sum staged in shared memory (in the warpgroup's own Q rows, or in an O tile
//     of its own with the TMA-store epilogue), then written by 16-byte coalesced stores or TMA
//     stores; fp32 LSE straight from registers.
// Shared memory: Q kBlockM·D·2 + 2 stages × (K + V) kBlockN·D·2 = 88 KiB (D 64), 160 KiB (D 96, stored
// as 128 columns), 160 KiB (D 128), 216 KiB (D 192), 224 KiB (D 256), + 1 KiB alignment + barriers; the
// tile-counter kernels (two Q buffers, an O tile, 3 stages at D 64): 144 KiB (D 64), 224 KiB (D 128),
// + 2 KiB of ones when the row sums come from the tensor cores.
// Registers: ptxas reports the entry count, 65536 / threads rounded down to 8 (168 for 384 threads,
// 128 for 512; the register file is 4 banks of 16384, one per SM sub-partition, each holding a
// quarter of the warps), which is what cudaFuncGetAttributes and CUPTI show and what the occupancy
// estimate uses: 168 × 384 = 64512 or 128 × 512 = 65536 registers → 1 CTA per SM (shared memory alone
// would allow 2 at D 64). setmaxnreg then moves registers between roles without changing the
// CTA's total: 24·128 + 240·256 = 64512, 24·128 + 160·384 = 64512 (TMA-store epilogue: 32·128 +
// 232·256 = 63488, its producer's tile hand-off needing more than 24). The overlapped D=128
// consumer needs about 200 (ptxas: no spill at a 200 budget, 144 B spilled at 176), so it depends on
// the 240; see mbarrier_wait_parity (tma.cuh) for the one construct found that silently caps it at 168.
// At D 256 a consumer holds 128 O accumulators, 40 of S and 20 of P (D 192: 96, 56, 28).
// FLOPs: 4·B·H·Sq·Sk·D (about halved for causal). Bytes: 2·(2·B·H·Sq·D + 2·B·Hkv·Sk·D), plus K/V
// re-read from L2 by every query block.
#include <cstdint>

namespace attnprof::cuda::hopper {
// Named (not anonymous) so the sm_80 pass, which compiles the kernel to a trap, does not warn that
// the traits' members are unused.
namespace flash_sm90 {

constexpr float kLog2e = 1.4426950408889634f;
constexpr int kWarpgroupThreads = 128;

constexpr int kMaxStages = 3;

// Keys per K/V tile for a kernel head dim (FA3's forward tiles on H100): 128, except 112 at D 192
// and 80 at D 256, where Q and two stages of 128-key K and V tiles would not fit 227 KiB.
constexpr int flash_sm90_block_n(int kernel_head_dim) {
  return kernel_head_dim == 256 ? 80 : kernel_head_dim == 192 ? 112 : 128;
}
// The query tile a Q buffer holds, as the producer worked it out (its number in the order, batch,
// head, first row), so the consumers do no integer division between tiles (the timeline build
// measured about 850 cycles from a warpgroup asking for its next Q to starting its main loop when
// they did; its key tiles follow from m0 by a division by the constant kBlockN). tile -1: no more
// tiles. One 16-byte shared-memory load.
struct alignas(16) TileHandoff {
  int tile, b, h, m0;
};
struct PipelineBarriers {
  // q_empty: the consumers are done with that Q buffer (and, without the TMA-store epilogue, the O
  // staged in it). Buffer 1 only with kDoubleBufferQ: query tile number `done` of a CTA takes buffer
  // done % kQBuffers.
  std::uint64_t q_full[2], q_empty[2];
  std::uint64_t k_full[kMaxStages], k_empty[kMaxStages];
  std::uint64_t v_full[kMaxStages], v_empty[kMaxStages];
  // TMA-store epilogue: the query tile each Q buffer holds, written by the producer before it
  // arrives on q_full (so a consumer reads it after its q_full wait): the producer alone decides
  // which tile comes next (it may draw it from a device counter).
  TileHandoff q_tile[2];
};

// kDoubleBufferQ: two Q buffers (the producer loads the next query tile's Q while the consumers
// still work on the current one); O rescaled only when some row of the warp changed its max (a row
// whose max did not change gets rescale exactly 1, where the plain FFMA can give 1 + 1 ulp, so the
// two kernels may differ in the last bit); a snake deal when a CTA strides through the order (CTA i
// takes the i-th tile of even waves and the i-th from the end of odd ones).
// kTmaStoreEpilogue (needs kDoubleBufferQ): O is staged in a tile of its own and written by TMA
// stores, so a warpgroup releases Q as soon as its main loop ends and leaves the epilogue after its
// st.shared (one thread issues the store and waits for it to have read the tile only before the next
// tile's epilogue); 3 K/V stages at D 64 (what cuDNN's kernels hold as PyTorch launches them); the
// producer names each tile to the consumers in shared memory (TileHandoff).
// kTimeline (needs kTmaStoreEpilogue): also records, per consumer warpgroup and query tile, the SM
// clock at the tile's start, once Q is there, at the main loop's end and at the epilogue's end
// (run_flash_timeline_sm90; a separate instantiation, so the forward itself carries no clock reads).
// kRowSumOnTensorCores (D 64 only; elsewhere no effect): P's row sums come from the tensor cores
// instead of an FADD per element: P·V runs as m64n72k16 over V and 8 columns of ones (2 KiB of
// shared memory each step's descriptor reaches through its atom stride), so accumulator columns
// 64-71 hold Σ P of the row, rescaled with O: the sum of the bf16 P that multiplies V (the weights
// then sum to exactly 1), and the softmax has 64 FADDs a thread fewer per key tile. The LSE needs
// the fp32 sum (the bf16 sum's log is off by up to 1.3e-3): a forward that asks for it runs the
// kernel without this flag.
// kPerWarpStore (needs kTmaStoreEpilogue): each warp stages its 16 rows of O and issues their TMA
// store itself (16-row boxes): no named barrier in the epilogue; the normaliser is rcp.approx (one
// MUFU op, not a division).
template <int kHeadDim_, int kConsumerWarpgroups_, bool kDoubleBufferQ_, bool kTmaStoreEpilogue_ = false,
          bool kTimeline_ = false, bool kRowSumOnTensorCores_ = false, bool kPerWarpStore_ = false>
struct FlashSm90TraitsOf {
  static constexpr int kHeadDim = kHeadDim_;
  static constexpr bool kTimeline = kTimeline_;
  static constexpr bool kPerWarpStore = kPerWarpStore_;
  static constexpr bool kOnesColumn = kRowSumOnTensorCores_ && kHeadDim == 64;
  static constexpr int kStoreRows = kPerWarpStore ? 16 : 64;  // rows of a TMA store box of O
  static constexpr int kConsumerWarpgroups = kConsumerWarpgroups_;  // 64 query rows each
  static constexpr bool kDoubleBufferQ = kDoubleBufferQ_;
  static constexpr bool kTmaStore = kTmaStoreEpilogue_;
  static constexpr int kQBuffers = kDoubleBufferQ ? 2 : 1;
  static constexpr bool kLazyRescale = kDoubleBufferQ;
  static constexpr bool kSnakeOrder = kDoubleBufferQ;
  static constexpr int kBlockM = 64 * kConsumerWarpgroups;          // query rows per CTA
  static constexpr int kBlockN = flash_sm90_block_n(kHeadDim);      // keys per K/V tile
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
  static constexpr int kAtoms = (kHeadDim + 63) / 64;  // 64-column (128-byte) swizzle atoms per row (D 96: 2)
  static constexpr int kQAtomBytes = kBlockM * 128;
  static constexpr int kKVAtomBytes = kBlockN * 128;
  static constexpr int kQBytes = kAtoms * kQAtomBytes;
  static constexpr int kKVBytes = kAtoms * kKVAtomBytes;  // one K (or V) tile: its expect_tx count
  static constexpr int kSAccumulators = kBlockN / 2;     // m64n{kBlockN} fp32 per thread
  static constexpr int kOAccumulators = kHeadDim / 2 + (kOnesColumn ? 4 : 0);  // m64n{D} (ones column: m64n72)
  static constexpr int kPSteps = kBlockN / 16;           // k16 steps of P·V
  static constexpr int kQKSteps = kHeadDim / 16;         // k16 steps of Q·Kᵀ
  static constexpr int kKOffset = kQBuffers * kQBytes;
  static constexpr int kVOffset = kKOffset + kStages * kKVBytes;
  static constexpr int kOOffset = kVOffset + kStages * kKVBytes;  // the TMA-store epilogue's O tile
  static constexpr int kOnesOffset = kOOffset + (kTmaStore ? kQBytes : 0);  // 16 key rows × 128 B of ones
  static constexpr int kOnesBytes = kOnesColumn ? 16 * 128 : 0;
  static constexpr int kBarrierOffset = kOnesOffset + kOnesBytes;
  static constexpr int kSmemBytes = 1024 /* alignment slack */ + kBarrierOffset + static_cast<int>(sizeof(PipelineBarriers));
  static_assert(kHeadDim == 64 || kHeadDim == 96 || kHeadDim == 128 || kHeadDim == 192 || kHeadDim == 256,
                "the kernel head dims (the wgmma m64n{D}k16 instructions written)");
  static_assert(kBlockN % 16 == 0 && kBlockN <= 256, "whole k16 steps of P·V; a TMA box holds at most 256 rows");
  static_assert(kStages <= kMaxStages, "PipelineBarriers holds kMaxStages stages");
  static_assert(!kTmaStore || kDoubleBufferQ, "the TMA-store epilogue hands tiles over between two Q buffers");
  static_assert(!kTimeline || kTmaStore, "the timeline build records the TMA-store epilogue's kernel");
  static_assert(!kPerWarpStore || kTmaStore, "the per-warp store is a TMA store");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA on sm_90");
  static_assert(kProducerRegisters * kWarpgroupThreads + kConsumerRegisters * kConsumerThreads <= kEntryRegisters * kThreads,
                "setmaxnreg can only redistribute the registers the CTA was launched with");
};

// The instantiations, named (not aliases) so a trace or a profile shows which kernel ran.
// FA3's tiles, one CTA per query tile (FlashSchedule::cta_per_tile): D 64 on 192 rows, D 96, 128, 192
// and 256 on 128 (kBlockN: flash_sm90_block_n).
template <int kHeadDim>
struct CtaPerTileTraits : FlashSm90TraitsOf<kHeadDim, kHeadDim == 64 ? 3 : 2, false> {};
// The tile-counter kernel (FlashSchedule::tile_counter): 128 rows, two Q buffers, TMA-store
// epilogue a warp at a time, row sums from the tensor cores at D 64.
template <int kHeadDim, bool kTimeline = false>
struct TileCounterTraits : FlashSm90TraitsOf<kHeadDim, 2, true, true, kTimeline, true, true> {};
// The same schedule for a forward that wants the LSE at D 64: fp32 row sums, one 64-row TMA store
// per warpgroup.
struct TileCounterLseD64Traits : FlashSm90TraitsOf<64, 2, true, true> {};

struct FlashSm90Params {
  void* o = nullptr;
  std::int64_t o_stride[3]{};  // batch, head, seq (elements)
  float* lse = nullptr;
  // The tensors' D: at most the kernel's kHeadDim (a multiple of 8); the 16-byte-store epilogue writes
  // its head_dim / 8 chunks of a row only.
  int head_dim = 0;
  int heads = 0, kv_group = 1, seq_q = 0, seq_k = 0;
  int batch_heads = 0, m_blocks = 0;  // tiles = m_blocks × batch_heads, longest (last m_block) first
  // The order runs through sections of group_heads consecutive (batch, head) pairs, longest first
  // within each (batch_heads: one section, the order above).
  int group_heads = 0;
  int causal = 0, causal_offset = 0;
  float softmax_scale = 1.0f, scale_log2 = 1.0f;
  bool q_seq_inner = true, k_seq_inner = true, v_seq_inner = true, o_seq_inner = true;
  // Timeline build only: kTimelineWords words per (query tile in grid order, consumer warpgroup).
  std::uint64_t* timeline = nullptr;
  // {next, retired} for the dynamic tile scheduler (TileCounterScheduler); null: each CTA strides
  // through the order (cta_tile).
  int* tile_counter = nullptr;
  // With a tile counter: the producer draws tile t+1 once tile t's Q is out and issues t+1's Q as
  // soon as its buffer is free.
  bool early_next_q = false;
};

}  // namespace flash_sm90
}  // namespace attnprof::cuda::hopper
