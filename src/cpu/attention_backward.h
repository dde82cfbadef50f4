#pragma once
// The CPU's FlashAttention-2 backward (flash and efficient): dQ, dK, dV from q, k, v, the
// forward's out and log-sum-exp, and dO, with the scores recomputed tile by tile from Q, K and
// the saved LSE (never an S×S buffer). attention_backward_tiles.h holds the tiling; the
// micro-kernels come from the ISA chosen at run time (AVX-512 or portable; bf16/fp16 inputs are
// converted to fp32 tiles while packing and the gradients rounded to the dtype when stored).
#include <attnprof/dtype.h>

#include <cstdint>

#include "cpu/cpu_features.h"
#include "cpu/fused_attention.h"

namespace attnprof::cpu {

// The forward's problem (q, k, v, out read; forward.lse, natural log, read: a row with lse −inf
// saw no key and contributes nothing) plus dO and the three gradients. Element strides are
// [b, h, s, d]; dq has H heads, dk/dv have Hkv (summed over the query heads of each group).
struct BackwardProblem {
  FusedProblem forward;
  const void* dout = nullptr;
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
  std::int64_t dout_strides[4]{}, dq_strides[4]{}, dk_strides[4]{}, dv_strides[4]{};
};

struct BackwardTiles {
  int block_q = 64;  // query rows per inner step (Br)
  int block_k = 64;  // keys per work item (Bc): the work item owns these rows of dK and dV
};

struct BackwardWorkspace {
  std::int64_t shared_bytes = 0;      // per query row: Δ = rowsum(dO ⊙ O) and the LSE in score units
  std::int64_t per_thread_bytes = 0;  // packed K/Kᵀ/Vᵀ, Q and dO tiles, score tiles, dK/dV and dQ accumulators
};

// The compute path attention_backward takes on this ISA: "avx512" for every dtype where AVX-512 is
// allowed, else "portable".
Isa backward_isa(Isa isa);
BackwardWorkspace backward_workspace(const BackwardProblem& problem, const BackwardTiles& tiles, int threads);
// shared: shared_bytes, scratch: threads · per_thread_bytes, both 64-byte aligned. Deterministic:
// the same inputs and thread count give the same bits (no atomics; fixed summation orders).
void attention_backward(const BackwardProblem& problem, const BackwardTiles& tiles, Isa isa, void* shared,
                        void* scratch, int threads);

namespace detail {
// Where each buffer lives in the shared and per-thread workspaces (float offsets, each piece
// 64-byte aligned), and the work split; the same for every ISA.
struct BackwardLayout {
  std::int64_t group = 1;  // query heads per kv head
  std::int64_t br = 64, bc = 64, dv = 16, bcp = 64;  // dv: D padded to 16; bcp: Bc padded to 16
  std::int64_t q_blocks = 1, k_blocks = 1;
  // shared
  std::int64_t off_delta = 0, off_lse = 0, shared_floats = 0;
  // per thread
  std::int64_t off_k = 0, off_kt = 0, off_vt = 0, off_dk = 0, off_dv = 0, off_q = 0, off_do = 0, off_s = 0, off_dp = 0,
               off_rows = 0, off_dq = 0, per_thread_floats = 0;
  // true: each thread takes whole (b, kv head) groups; false: all threads share each group's key
  // blocks and their dQ partials are summed after (few groups, many threads)
  bool group_per_thread = true;
};
BackwardLayout backward_layout(const BackwardProblem& problem, const BackwardTiles& tiles, int threads);

void attention_backward_portable(const BackwardProblem&, const BackwardTiles&, void*, void*, int);
void attention_backward_avx512(const BackwardProblem&, const BackwardTiles&, void*, void*, int);
}  // namespace detail

}  // namespace attnprof::cpu
