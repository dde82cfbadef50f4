// cuTensorMapEncodeTiled through the runtime's driver entry point (no -lcuda), every step checked.
#include "cuda/hopper/tma.h"

#include <attnprof/error.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "cuda/check.h"

namespace attnprof::cuda::hopper {
namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_tiled_entry_point() {
  // Looked up once; the runtime keeps the driver loaded for the life of the process.
  static const PFN_cuTensorMapEncodeTiled_v12000 entry = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    ATTNPROF_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || fn == nullptr)
      throw Error(fmt::format(
          "cudaGetDriverEntryPointByVersion(\"cuTensorMapEncodeTiled\", 12000) found no such driver function "
          "(cudaDriverEntryPointQueryResult {}): the driver predates CUDA 12.0",
          static_cast<int>(found)));
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return entry;
}

}  // namespace

CUtensorMap make_bf16_tile_map(const void* device_data, std::uint64_t rows, std::uint64_t cols,
                               std::uint64_t row_stride) {
  const auto address = reinterpret_cast<std::uintptr_t>(device_data);
  if (address % 16 != 0)
    throw Error(fmt::format("make_bf16_tile_map: the global address {:#x} is not 16-byte aligned (TMA requires it)", address));
  if (rows == 0 || cols == 0 || row_stride < cols || row_stride % 8 != 0)
    throw Error(fmt::format("make_bf16_tile_map: rows {} cols {} row_stride {}: need rows, cols > 0 and a row stride "
                            ">= cols and a multiple of 8 elements (16 bytes)",
                            rows, cols, row_stride));
  const cuuint64_t global_dim[2] = {cols, rows};  // innermost first
  const cuuint64_t global_stride_bytes[1] = {row_stride * 2};
  const cuuint32_t box_dim[2] = {kTileCols, kTileRows};
  const cuuint32_t element_strides[2] = {1, 1};
  CUtensorMap map{};
  const CUresult status = encode_tiled_entry_point()(
      &map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(device_data), global_dim, global_stride_bytes,
      box_dim, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (status != CUDA_SUCCESS)
    throw_driver_error(static_cast<int>(status), "cuTensorMapEncodeTiled(bf16, rank 2, box 64x64, SWIZZLE_128B)",
                       __FILE__, __LINE__);
  return map;
}

AttentionTileMap make_attention_tile_map(const void* device_data, CUtensorMapDataType element_type,
                                         std::uint64_t batch, std::uint64_t heads, std::uint64_t seq,
                                         std::uint64_t head_dim, std::int64_t batch_stride, std::int64_t head_stride,
                                         std::int64_t seq_stride, std::uint32_t box_rows) {
  const auto address = reinterpret_cast<std::uintptr_t>(device_data);
  if (address % 16 != 0)
    throw Error(fmt::format("make_attention_tile_map: the global address {:#x} is not 16-byte aligned (TMA requires it)",
                            address));
  if (element_type != CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 && element_type != CU_TENSOR_MAP_DATA_TYPE_FLOAT16)
    throw Error("make_attention_tile_map: the element type must be bf16 or fp16");
  if (batch == 0 || heads == 0 || seq == 0 || head_dim == 0 || head_dim % 8 != 0)
    throw Error(fmt::format("make_attention_tile_map: batch {} heads {} seq {} head_dim {}: need sizes > 0 and a "
                            "head_dim that is a multiple of 8 (16 bytes)",
                            batch, heads, seq, head_dim));
  for (std::int64_t stride : {batch_stride, head_stride, seq_stride})
    if (stride <= 0 || stride % 8 != 0)
      throw Error(fmt::format("make_attention_tile_map: strides (batch {}, head {}, seq {}) must be positive multiples "
                              "of 8 elements (16 bytes)",
                              batch_stride, head_stride, seq_stride));
  if (box_rows == 0 || box_rows > 256)
    throw Error(fmt::format("make_attention_tile_map: box_rows {} is outside 1..256", box_rows));
  AttentionTileMap result;
  result.seq_inner = seq_stride <= head_stride;
  const std::uint64_t inner_dim = result.seq_inner ? seq : heads, outer_dim = result.seq_inner ? heads : seq;
  const std::int64_t inner_stride = result.seq_inner ? seq_stride : head_stride;
  const std::int64_t outer_stride = result.seq_inner ? head_stride : seq_stride;
  const cuuint64_t global_dim[4] = {head_dim, inner_dim, outer_dim, batch};  // innermost first
  const cuuint64_t global_stride_bytes[3] = {static_cast<cuuint64_t>(inner_stride) * 2,
                                             static_cast<cuuint64_t>(outer_stride) * 2,
                                             static_cast<cuuint64_t>(batch_stride) * 2};
  const cuuint32_t box_dim[4] = {kTileCols, result.seq_inner ? box_rows : 1u, result.seq_inner ? 1u : box_rows, 1u};
  const cuuint32_t element_strides[4] = {1, 1, 1, 1};
  const CUresult status = encode_tiled_entry_point()(
      &result.map, element_type, 4, const_cast<void*>(device_data), global_dim, global_stride_bytes, box_dim,
      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (status != CUDA_SUCCESS)
    throw_driver_error(static_cast<int>(status),
                       fmt::format("cuTensorMapEncodeTiled(rank 4, dims {{{}, {}, {}, {}}}, byte strides {{{}, {}, {}}}, "
                                   "box {{64, {}}}, SWIZZLE_128B)",
                                   head_dim, inner_dim, outer_dim, batch, global_stride_bytes[0],
                                   global_stride_bytes[1], global_stride_bytes[2], box_rows)
                           .c_str(),
                       __FILE__, __LINE__);
  return result;
}

}  // namespace attnprof::cuda::hopper
