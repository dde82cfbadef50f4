#pragma once
// The CPU's single-kernel attention (flash and efficient): tiles over keys/values with an online
// softmax, never an S×S buffer. Both run one tile driver (attention_tiles.h) with different tile
// configurations; the micro-kernels come from the ISA chosen at run time.
#include <attnprof/dtype.h>

#include <cstdint>

#include "cpu/cpu_features.h"

namespace attnprof::cpu {

// Element strides are [b, h, s, d]; q/out have H heads, k/v have Hkv (head h reads h / (H/Hkv)).
struct FusedProblem {
  DType dtype = DType::fp32;
  std::int64_t batch = 1, heads = 1, kv_heads = 1, seq_q = 1, seq_k = 1, head_dim = 1;
  float scale = 1.0f;
  bool causal = false;  // query row i sees keys 0..i + causal_offset
  // 0: top-left; Sk − Sq: bottom-right (AttentionSpec::causal_offset()). Rows with
  // i + causal_offset < 0 see no key and come out as zeros (lse −inf).
  std::int64_t causal_offset = 0;
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;
  std::int64_t q_strides[4]{}, k_strides[4]{}, v_strides[4]{}, out_strides[4]{};
  float* lse = nullptr;  // optional contiguous [B, H, Sq], natural log
};

struct TileConfig {
  int block_q = 64;       // query rows per work item (Br)
  int block_k = 256;      // keys per tile (Bc); a causal block's last tile is clamped to its last row
  // true (flash): pack a head's K/V once before its q-blocks, dynamic schedule with each head's
  // costliest (causal: last) q-blocks first. false (efficient): pack K/V tile by tile as each
  // q-block reaches it, static schedule in memory order.
  bool prepack_kv = true;
};

struct FusedWorkspace {
  std::int64_t prepack_bytes = 0;     // shared packed K/V panels (few heads, many threads)
  std::int64_t per_thread_bytes = 0;  // Q pack, score/probability tiles, accumulator, row statistics,
                                      // and the packed K/V of the thread's current head
};

// The compute path fused_attention takes for this dtype on this ISA ("avx512_amx" for bf16 on AMX,
// "avx512_bf16", "avx512", "portable").
Isa fused_isa(DType dtype, Isa isa);
FusedWorkspace fused_workspace(const FusedProblem& problem, const TileConfig& config, Isa isa, int threads);
// prepack: prepack_bytes, scratch: threads · per_thread_bytes, both 64-byte aligned.
void fused_attention(const FusedProblem& problem, const TileConfig& config, Isa isa, void* prepack, void* scratch,
                     int threads);

namespace detail {
void fused_attention_portable(const FusedProblem&, const TileConfig&, void*, void*, int);
void fused_attention_avx512_fp32(const FusedProblem&, const TileConfig&, void*, void*, int);
void fused_attention_avx512_bf16(const FusedProblem&, const TileConfig&, void*, void*, int);
void fused_attention_amx(const FusedProblem&, const TileConfig&, void*, void*, int);
FusedWorkspace workspace_fp32(const FusedProblem&, const TileConfig&, int threads);
FusedWorkspace workspace_bf16(const FusedProblem&, const TileConfig&, int threads);
FusedWorkspace workspace_amx(const FusedProblem&, const TileConfig&, int threads);
}  // namespace detail

}  // namespace attnprof::cpu
