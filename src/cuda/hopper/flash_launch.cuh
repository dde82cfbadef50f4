#pragma once
// Host launch of one instantiation of the sm_90a flash kernel (flash_kernel.cuh): the TMA maps, the
// kernel's parameters and the grid its Scheduler deals. Included by flash_dispatch.cu only, so each
// instantiation compiles once.
#include <attnprof/error.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cuda/check.h"
#include "cuda/fused_attention.h"
#include "cuda/hopper/flash_kernel.cuh"
#include "cuda/hopper/flash_tile_scheduler.cuh"
#include "cuda/hopper/flash_traits.cuh"
#include "cuda/hopper/tma.h"
#include "cuda/kernel_attributes.h"
#include "cuda/str_cat.h"

namespace attnprof::cuda::hopper::flash_sm90 {

// The fields tile_coords and visible_key_tiles read, but group_heads (the Scheduler's).
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

// Launches kernel traits Tr on element type T (__half or __nv_bfloat16) with the query tiles dealt
// by Scheduler (flash_tile_scheduler.cuh); `timeline`: the timeline build's records (Tr::kTimeline).
template <class Tr, class T, class Scheduler>
void launch_typed(const FusedAttentionArgs& a, cudaStream_t stream, std::uint64_t* timeline = nullptr) {
  if (a.head_dim > Tr::kHeadDim || a.head_dim % 8 != 0)  // the dispatch sends only these here
    throw Error(str_cat("flash_forward_sm90: head_dim ", a.head_dim, " on the D ", Tr::kHeadDim, " kernel"));
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
  // The TMA-store epilogue stores O through a map of kStoreRows-row boxes; the others pass Q's map
  // in that slot, unused, so their O needs no TMA alignment.
  const AttentionTileMap o = Tr::kTmaStore ? make_attention_tile_map(a.o, element, b, static_cast<std::uint64_t>(a.heads),
                                                                     static_cast<std::uint64_t>(a.seq_q), d, a.o_stride[0],
                                                                     a.o_stride[1], a.o_stride[2], Tr::kStoreRows)
                                           : q;
  FlashSm90Params p;
  p.o = a.o;
  for (int i = 0; i < 3; ++i) p.o_stride[i] = a.o_stride[i];
  p.o_seq_inner = o.seq_inner;
  p.timeline = timeline;
  p.tile_counter = Scheduler::tile_counter(stream);
  p.early_next_q = p.tile_counter != nullptr;  // with a counter, the next Q is issued early
  p.lse = a.lse;
  p.head_dim = static_cast<int>(a.head_dim);
  fill_tile_fields<Tr>(p, a);
  p.kv_group = static_cast<int>(a.heads / a.kv_heads);
  p.softmax_scale = a.softmax_scale;
  p.scale_log2 = a.softmax_scale * kLog2e;
  p.q_seq_inner = q.seq_inner;
  p.k_seq_inner = k.seq_inner;
  p.v_seq_inner = v.seq_inner;

  auto kernel = flash_forward_sm90_kernel<Tr, T>;
  configure_kernel_once(reinterpret_cast<const void*>(kernel), Tr::kSmemBytes);
  const long long tiles = static_cast<long long>(p.batch_heads) * p.m_blocks;
  const long long ctas = Scheduler::ctas(tiles);
  p.group_heads = Scheduler::group_heads(a, p.batch_heads);
  kernel<<<static_cast<unsigned>(ctas), Tr::kThreads, Tr::kSmemBytes, stream>>>(q.map, k.map, v.map, o.map, p);
  ATTNPROF_CUDA_CHECK_LAUNCH("flash_forward_sm90_kernel");
}

}  // namespace attnprof::cuda::hopper::flash_sm90
