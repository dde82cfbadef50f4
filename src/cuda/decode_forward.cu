// The split-KV decode forward's launch (decode_forward.h): the checks, the workspace and the
// per-device arrival counters, then the kernel of the plan's production geometry for the head dim
// and dtype.
#include "cuda/decode_forward.h"

#include <attnprof/error.h>
#include <attnprof/kernel_overrides.h>
#include <attnprof/tensor.h>

#include <algorithm>
#include <array>
#include <mutex>
#include <string>

#include "cuda/check.h"
#include "cuda/cuda_backend.h"
#include "cuda/decode_launch.cuh"
#include "cuda/hopper/flash_hopper.h"
#include "cuda/per_device.h"

namespace attnprof::cuda {
namespace decode {
namespace {

// The arrival counters of every device: zero between launches (each launch leaves them so), grown
// (a new zeroed buffer; the old one freed in the stream's order) when a forward needs more.
int* arrival_counters(std::int64_t count, cudaStream_t stream) {
  struct Counters {
    int* ptr = nullptr;
    std::int64_t count = 0;
  };
  static std::mutex mutex;
  static std::array<Counters, PerDevice<int>::kMaxDevices> kept;
  int device = -1;
  ATTNPROF_CUDA_CHECK(cudaGetDevice(&device));
  if (device < 0 || device >= PerDevice<int>::kMaxDevices)
    throw Error("decode attention: device " + std::to_string(device) + " is past the " +
                std::to_string(PerDevice<int>::kMaxDevices) + " devices the arrival counters are kept for");
  std::lock_guard<std::mutex> lock(mutex);
  Counters& c = kept[static_cast<std::size_t>(device)];
  if (c.count < count) {
    const std::int64_t grown = std::max({count, 2 * c.count, std::int64_t{4096}});
    void* fresh = nullptr;
    ATTNPROF_CUDA_CHECK(cudaMallocAsync(&fresh, static_cast<std::size_t>(grown) * sizeof(int), stream));
    ATTNPROF_CUDA_CHECK(cudaMemsetAsync(fresh, 0, static_cast<std::size_t>(grown) * sizeof(int), stream));
    if (c.ptr != nullptr) ATTNPROF_CUDA_CHECK(cudaFreeAsync(c.ptr, stream));
    c = Counters{static_cast<int*>(fresh), grown};
  }
  return c.ptr;
}

}  // namespace

int sm_count_of_current_device() {
  static PerDevice<int> counts;
  return counts.get([](int device) {
    if (device < 0) ATTNPROF_CUDA_CHECK(cudaGetDevice(&device));  // throws naming the failure
    int sms = 0;
    ATTNPROF_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return sms;
  });
}

PreparedDecode prepare_decode(const FusedAttentionArgs& args, const DecodePlan& plan, cudaStream_t stream) {
  if (args.dtype != DType::bf16 && args.dtype != DType::fp16)
    throw UsageError("dtype " + std::string(dtype_name(args.dtype)) + ": the fused GPU kernels take bf16 or fp16");
  PreparedDecode prepared;
  prepared.args = args;
  // Beyond [-seq_q, seq_k] every row sees all keys or none: the kernel's 32-bit limits stay in range.
  prepared.args.causal_offset = std::clamp<std::int64_t>(args.causal_offset, -args.seq_q, args.seq_k);
  const DecodeShape shape = DecodeShape::of(prepared.args);
  if (!plan.fits(shape))
    throw Error("decode attention: the plan (" + std::to_string(plan.splits) + " splits of " +
                std::to_string(plan.keys_per_split) + " keys) is not one for head_dim " + std::to_string(args.head_dim) +
                ", seq_q " + std::to_string(args.seq_q) + ", seq_k " + std::to_string(args.seq_k));
  DecodeParams& params = prepared.params;
  params.splits = plan.splits;
  params.keys_per_split = static_cast<int>(plan.keys_per_split);
  params.keys = static_cast<int>(plan.keys);
  params.rows = static_cast<int>(plan.rows);
  params.row_blocks = plan.row_blocks;
  params.group = static_cast<int>(args.heads / args.kv_heads);
  if (plan.splits > 1 && !plan.merges_in_clusters()) {
    // The allocator frees in the backend stream's order, and the counters are shared by every
    // launch on the device: the kernels must run on that stream, one after another.
    if (stream != backend_stream())
      throw Error("decode attention: launched on another stream than the CUDA backend's, which frees the workspace");
    prepared.workspace = Tensor::empty({plan.workspace_bytes(shape)}, DType::boolean, Device::cuda);
    params.partial_o = static_cast<float*>(prepared.workspace.raw());
    params.partial_lse = params.partial_o + args.batch * args.heads * args.seq_q * plan.splits * args.head_dim;
    params.counters = arrival_counters(args.batch * args.kv_heads * plan.row_blocks, stream);
  }
  return prepared;
}

}  // namespace decode

DecodePlan flash_decode_plan(const DecodeShape& shape) {
  if (!kernel_overrides().flash_schedule.empty()) return {};
  // The one-CTA geometry merges 2 splits in a thread block cluster, which only its sm_90a machine
  // code has: on another device (compute capability 10.x, say) the driver compiles the kernel from
  // the compute_80 PTX instead, so the plan is offered no shared memory for the one-CTA geometry
  // there and takes the two-CTA one.
  static PerDevice<std::int64_t> smem_per_block;
  const std::int64_t smem = hopper::current_device_not_hopper() ? 0 : smem_per_block.get([](int device) {
    if (device < 0) ATTNPROF_CUDA_CHECK(cudaGetDevice(&device));  // throws naming the failure
    int bytes = 0;
    ATTNPROF_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    return std::int64_t{bytes};
  });
  return plan_decode(shape, decode::sm_count_of_current_device(), smem);
}

void launch_decode_attention(const FusedAttentionArgs& args, const DecodePlan& plan, cudaStream_t stream) {
  const decode::PreparedDecode prepared = decode::prepare_decode(args, plan, stream);
  const FusedAttentionArgs& a = prepared.args;
  const decode::DecodeParams& p = prepared.params;
  // plan_decode sized the grid for these geometries (decode_grid_rule, or one CTA an SM).
  using G64 = decode::ProductionGeometry<64>;
  using G128 = decode::ProductionGeometry<128>;
  using G128OneCta = decode::GeometryOf<kDecodeGeometry128OneCta>;
  static_assert(decode::DecodeTraits<128, G128OneCta>::kSmemBytes + 128 == kDecodeOneCtaSmemBytes,
                "decode_plan.h's count of the one-CTA geometry's shared memory");
  const int sms = decode::sm_count_of_current_device();
  const bool bf16 = args.dtype == DType::bf16;
  if (plan.one_cta_per_sm)  // plan.fits: head dim 128
    bf16 ? decode::launch_decode_kernel<128, __nv_bfloat16, G128OneCta>(a, p, stream, sms)
         : decode::launch_decode_kernel<128, __half, G128OneCta>(a, p, stream, sms);
  else if (args.head_dim == 64)
    bf16 ? decode::launch_decode_kernel<64, __nv_bfloat16, G64>(a, p, stream, sms)
         : decode::launch_decode_kernel<64, __half, G64>(a, p, stream, sms);
  else
    bf16 ? decode::launch_decode_kernel<128, __nv_bfloat16, G128>(a, p, stream, sms)
         : decode::launch_decode_kernel<128, __half, G128>(a, p, stream, sms);
}

}  // namespace attnprof::cuda
