// Host launch of `flash`'s sm_90a backward (flash_bwd.h): the one translation unit of its kernels,
// 4 instantiations (D 64 and 128, bf16 and fp16), 4 of the dQ conversion and 4 of the preparation.
#include <attnprof/error.h>
#include <attnprof/kernel_overrides.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cuda/check.h"
#include "cuda/hopper/flash_bwd.h"
#include "cuda/hopper/flash_bwd_kernel.cuh"
#include "cuda/hopper/flash_hopper.h"
#include "cuda/hopper/flash_tile_scheduler.cuh"
#include "cuda/hopper/tma.h"
#include "cuda/kernel_attributes.h"
#include "cuda/str_cat.h"
#include "ops/fused_head_dim.h"

namespace attnprof::cuda::hopper {
namespace {

using namespace flash_bwd_sm90;

AttentionTileMap map_of(const void* data, CUtensorMapDataType element, const FusedAttentionArgs& a, std::int64_t heads,
                        std::int64_t seq, const std::int64_t (&stride)[3], std::uint32_t box_rows) {
  return make_attention_tile_map(data, element, static_cast<std::uint64_t>(a.batch), static_cast<std::uint64_t>(heads),
                                 static_cast<std::uint64_t>(seq), static_cast<std::uint64_t>(a.head_dim), stride[0],
                                 stride[1], stride[2], box_rows);
}

template <class Tr, class T>
void launch_typed(const FusedBackwardArgs& args, float* dq_accum, cudaStream_t stream) {
  const FusedAttentionArgs& a = args.fwd;
  const CUtensorMapDataType element =
      std::is_same_v<T, __half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const AttentionTileMap q = map_of(a.q, element, a, a.heads, a.seq_q, a.q_stride, Tr::kBlockM);
  const AttentionTileMap d_o = map_of(args.dout, element, a, a.heads, a.seq_q, args.do_stride, Tr::kBlockM);
  const AttentionTileMap k = map_of(a.k, element, a, a.kv_heads, a.seq_k, a.k_stride, Tr::kBlockN);
  const AttentionTileMap v = map_of(a.v, element, a, a.kv_heads, a.seq_k, a.v_stride, Tr::kBlockN);
  BwdSm90Params p;
  p.dq_accum = dq_accum;
  const std::int64_t accumulator_floats = dq_accumulator_floats(a.batch * a.heads, a.seq_q, Tr::kHeadDim);
  p.row_stats = dq_accum + accumulator_floats;  // the workspace's second part (16 KiB-aligned)
  p.tile_counter = reinterpret_cast<int*>(p.row_stats + row_stats_floats(a.batch * a.heads, a.seq_q));  // its third
  p.dk = args.dk;
  p.dv = args.dv;
  for (int i = 0; i < 3; ++i) {
    p.dk_stride[i] = args.dk_stride[i];
    p.dv_stride[i] = args.dv_stride[i];
  }
  p.head_dim = static_cast<int>(a.head_dim);
  p.heads = static_cast<int>(a.heads);
  p.kv_heads = static_cast<int>(a.kv_heads);
  p.kv_group = static_cast<int>(a.heads / a.kv_heads);
  p.seq_q = static_cast<int>(a.seq_q);
  p.seq_k = static_cast<int>(a.seq_k);
  p.m_blocks = static_cast<int>((a.seq_q + Tr::kBlockM - 1) / Tr::kBlockM);
  p.causal = a.causal ? 1 : 0;
  p.causal_offset = static_cast<int>(a.causal ? a.causal_offset : 0);
  p.softmax_scale = a.softmax_scale;
  p.scale_log2 = a.softmax_scale * kLog2e;
  p.q_seq_inner = q.seq_inner;
  p.k_seq_inner = k.seq_inner;
  p.v_seq_inner = v.seq_inner;
  p.do_seq_inner = d_o.seq_inner;

  const std::int64_t tiles = a.batch * a.heads * p.m_blocks;
  // An ordinary launch: the preparation reads O, dO and the LSE without waiting, so it must not start
  // before the kernels that wrote them have finished.
  flash_backward_prep_kernel<Tr, T><<<static_cast<unsigned>(tiles), 256, 0, stream>>>(args, p.row_stats, dq_accum,
                                                                                     p.m_blocks, p.tile_counter);
  ATTNPROF_CUDA_CHECK_LAUNCH("flash_backward_prep_kernel");
  auto kernel = flash_backward_sm90_kernel<Tr, T>;
  configure_kernel_once(reinterpret_cast<const void*>(kernel), Tr::kSmemBytes);
  p.pairs = static_cast<int>(a.batch * a.kv_heads);
  p.key_blocks = static_cast<int>((a.seq_k + Tr::kBlockN - 1) / Tr::kBlockN);
  // Sections of 8 pairs: on the H200 −4% to −9% against each pair's key blocks in a row at three
  // of the five anchors, under 1% at the other two; one section (longest first over every pair)
  // lost 19% at 16x32x512x128 and 8.5% at 8x16x1024x64 to Q/dO re-read from memory; sections
  // sized to hold 8, 16 or 32 MiB of Q/dO were nowhere more than 0.6% faster than 8 pairs and lost
  // up to 1.6%, 3.8% and 12% (bench/RESULTS.md).
  p.group_pairs = 8;
  // pairs · key_blocks ≤ batch·kv_heads·seq_k, K's rows: under 2^31 for any problem whose tensors
  // fit in GPU memory (Q, K, V, O, dO, dQ, dK, dV of 2^31 rows of 8 bf16 are 32 GiB each).
  p.tiles = static_cast<int>(static_cast<std::int64_t>(p.pairs) * p.key_blocks);
  // Persistent, a CTA an SM (one fits: kSmemBytes): each CTA's epilogue runs under the loads of its
  // next tile.
  const dim3 grid(static_cast<unsigned>(std::min(p.tiles, flash_sm90::multiprocessor_count())));
  // The main and conversion kernels may start while the kernel before each finishes (programmatic
  // dependent launch: flash_bwd_kernel.cuh says where each waits).
  cudaLaunchAttribute overlap{};
  overlap.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = dim3(Tr::kThreads);
  config.dynamicSmemBytes = Tr::kSmemBytes;
  config.stream = stream;
  config.attrs = &overlap;
  config.numAttrs = 1;
  ATTNPROF_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, q.map, k.map, v.map, d_o.map, p));
  // Exactly one CTA per tile: the conversion kernel has no bounds check.
  config.gridDim = dim3(static_cast<unsigned>(tiles));
  config.blockDim = dim3(256);
  config.dynamicSmemBytes = 0;
  ATTNPROF_CUDA_CHECK(cudaLaunchKernelEx(&config, flash_backward_dq_convert_kernel<Tr, T>, dq_accum,
                                         static_cast<T*>(args.dq), p.m_blocks, p.seq_q, p.heads, p.head_dim,
                                         args.dq_stride[0], args.dq_stride[1], args.dq_stride[2],
                                         a.softmax_scale));
}

template <class T>
void launch_head_dim(const FusedBackwardArgs& args, float* dq_accum, cudaStream_t stream) {
  if (args.fwd.head_dim <= 64)
    launch_typed<BwdSm90Traits<64>, T>(args, dq_accum, stream);
  else
    launch_typed<BwdSm90Traits<128>, T>(args, dq_accum, stream);
}

}  // namespace

bool flash_backward_runs_sm90(const AttentionSpec& spec) {
  if (spec.head_dim < 1 || spec.head_dim > 128) return false;  // others padded to a multiple of 8
  if (spec.dtype != DType::bf16 && spec.dtype != DType::fp16) return false;
  if (kernel_overrides().deterministic) return false;
  return flash_schedule_choice() != FlashSchedule::sm80;
}

std::int64_t flash_backward_sm90_accumulator_bytes(const AttentionSpec& spec) {
  const int kernel_head_dim = spec.head_dim <= 64 ? 64 : 128;
  return (dq_accumulator_floats(spec.batch * spec.heads, spec.seq_q, kernel_head_dim) +
          row_stats_floats(spec.batch * spec.heads, spec.seq_q) + kTileCounterFloats) *
         static_cast<std::int64_t>(sizeof(float));
}

void launch_flash_backward_sm90(const FusedBackwardArgs& args, float* dq_accum, cudaStream_t stream) {
  const FusedAttentionArgs& a = args.fwd;
  if (a.dtype != DType::bf16 && a.dtype != DType::fp16)
    throw UsageError(str_cat("dtype ", dtype_name(a.dtype), ": the GPU backward takes bf16 or fp16"));
  if (a.head_dim % 8 != 0 || a.head_dim > 128)
    throw UsageError(str_cat("head_dim ", a.head_dim, ": the sm_90a flash backward takes multiples of 8 up to 128"));
  if (auto why = current_device_not_hopper()) throw Error(str_cat("flash_backward_sm90: ", *why));
  if (a.dtype == DType::fp16)
    launch_head_dim<__half>(args, dq_accum, stream);
  else
    launch_head_dim<__nv_bfloat16>(args, dq_accum, stream);
}

}  // namespace attnprof::cuda::hopper
