// Which instantiation of the sm_90a flash kernel runs (flash_hopper.h): the schedule choice, the
// forward's dispatch by schedule, head dim and dtype, and the timeline build. The one translation
// unit of the kernel: 16 forward instantiations (cta_per_tile at D 64, 96, 128, 192, 256 and
// tile_counter at D 64 and 128, three kernels, each in bf16 and fp16) and 2 timeline ones.
#include "cuda/hopper/flash_hopper.h"

#include <attnprof/error.h>
#include <attnprof/kernel_overrides.h>
#include <attnprof/tensor.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cuda/check.h"
#include "cuda/hopper/flash_heuristics.h"
#include "cuda/hopper/flash_launch.cuh"
#include "cuda/hopper/flash_tile_scheduler.cuh"
#include "cuda/hopper/flash_timeline.h"
#include "cuda/hopper/flash_traits.cuh"
#include "cuda/per_device.h"
#include "cuda/str_cat.h"

namespace attnprof::cuda::hopper {
namespace flash_sm90 {

int multiprocessor_count() {
  static PerDevice<int> counts;
  return counts.get([](int device) {
    if (device < 0) ATTNPROF_CUDA_CHECK(cudaGetDevice(&device));  // throws naming the failure
    int count = 0;
    ATTNPROF_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
    return count;
  });
}

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

}  // namespace flash_sm90

std::optional<std::string> current_device_not_hopper() {
  static PerDevice<std::optional<std::string>> answers;
  return answers.get([](int) { return hopper_unavailable_reason(); });
}

namespace {

using namespace flash_sm90;

// The schedule's kernel for one element type T, at the kernel head dim that runs args.head_dim.
template <class T>
void launch_schedule(const FusedAttentionArgs& args, cudaStream_t stream, FlashSchedule schedule) {
  const int kernel_head_dim = flash_sm90_kernel_head_dim(args.head_dim);
  if (schedule == FlashSchedule::tile_counter) {
    if (kernel_head_dim == 128)
      launch_typed<TileCounterTraits<128>, T, TileCounterScheduler>(args, stream);
    else if (args.lse == nullptr)
      launch_typed<TileCounterTraits<64>, T, TileCounterScheduler>(args, stream);
    else  // the ones column sums the bf16 P, whose log is no LSE
      launch_typed<TileCounterLseD64Traits, T, TileCounterScheduler>(args, stream);
    return;
  }
  switch (kernel_head_dim) {
    case 64: return launch_typed<CtaPerTileTraits<64>, T, CtaPerTileScheduler>(args, stream);
    case 96: return launch_typed<CtaPerTileTraits<96>, T, CtaPerTileScheduler>(args, stream);
    case 128: return launch_typed<CtaPerTileTraits<128>, T, CtaPerTileScheduler>(args, stream);
    case 192: return launch_typed<CtaPerTileTraits<192>, T, CtaPerTileScheduler>(args, stream);
    default: return launch_typed<CtaPerTileTraits<256>, T, CtaPerTileScheduler>(args, stream);
  }
}

}  // namespace

std::optional<std::string> hopper_unavailable_reason() {
  int count = 0;
  if (cudaError_t status = cudaGetDeviceCount(&count); status != cudaSuccess) {
    cudaGetLastError();
    return str_cat("cudaGetDeviceCount: ", cudaGetErrorString(status));
  }
  if (count == 0) return std::string("no CUDA device");
  int device = 0, major = 0, minor = 0;
  ATTNPROF_CUDA_CHECK(cudaGetDevice(&device));
  ATTNPROF_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  ATTNPROF_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  if (major != 9 || minor != 0)
    return str_cat("device ", device, " is compute capability ", major, ".", minor,
                   "; the wgmma/TMA code is built for sm_90a only");
  return std::nullopt;
}

FlashSchedule flash_schedule_choice() {
  const std::string want = kernel_overrides().flash_schedule;
  if (!want.empty() && want != "sm80" && want != "sm90-cta-per-tile" && want != "sm90-tile-counter")
    throw UsageError(*kernel_overrides_error(kernel_overrides()));
  if (want == "sm80") return FlashSchedule::sm80;
  const auto why = current_device_not_hopper();
  if (!want.empty() && why) throw UsageError(str_cat("flash_schedule '", want, "': ", *why));
  if (why) return FlashSchedule::sm80;
  if (want == "sm90-cta-per-tile") return FlashSchedule::cta_per_tile;
  if (want == "sm90-tile-counter") return FlashSchedule::tile_counter;
  return FlashSchedule::automatic;
}

void launch_flash_attention_sm90(const FusedAttentionArgs& args, cudaStream_t stream, FlashSchedule schedule) {
  if (args.dtype != DType::bf16 && args.dtype != DType::fp16)
    throw UsageError(str_cat("dtype ", dtype_name(args.dtype), ": the fused GPU kernels take bf16 or fp16"));
  if (!flash_sm90_takes_head_dim(args.head_dim))
    throw UsageError(str_cat("head_dim ", args.head_dim, ": the sm_90a flash kernel takes multiples of 8 from 8 to 256"));
  if (schedule == FlashSchedule::sm80) throw Error("launch_flash_attention_sm90: asked for the sm80 kernel");
  if (schedule == FlashSchedule::automatic) schedule = auto_flash_schedule(args.head_dim, args.seq_q);
  if (schedule == FlashSchedule::tile_counter && !flash_sm90_tile_counter_takes(args.head_dim))
    // args.head_dim is the kernel's: a head dim that is not a multiple of 8 arrives padded to one.
    throw UsageError(str_cat("flash_schedule 'sm90-tile-counter': head_dim ", args.head_dim,
                             " (rounded up to a multiple of 8) runs on the D ", flash_sm90_kernel_head_dim(args.head_dim),
                             " kernel, built for sm90-cta-per-tile only; the tile counter takes head dims 1..64 and "
                             "97..128"));
  if (auto why = current_device_not_hopper()) throw Error(str_cat("flash_forward_sm90: ", *why));
  // Tiles are numbered by one int (grid.x ≤ 2^31 − 1); row and key indices stay in int too.
  if (args.batch * args.heads * ((args.seq_q + 63) / 64) > 0x7fffffffll || args.seq_q > (1ll << 30) ||
      args.seq_k > (1ll << 30) || args.causal_offset > (1ll << 30) || args.causal_offset < -(1ll << 30))
    throw Error("flash_forward_sm90: the problem exceeds the kernel's grid");
  if (args.dtype == DType::fp16)
    launch_schedule<__half>(args, stream, schedule);
  else
    launch_schedule<__nv_bfloat16>(args, stream, schedule);
}

std::vector<FlashTileTiming> run_flash_timeline_sm90(const FusedAttentionArgs& args, cudaStream_t stream) {
  if (args.dtype != DType::bf16)
    throw UsageError(str_cat("dtype ", dtype_name(args.dtype), ": the flash timeline build takes bf16"));
  if (args.head_dim != 64 && args.head_dim != 128)
    throw UsageError(str_cat("head_dim ", args.head_dim, ": the flash timeline build takes 64 or 128"));
  if (auto why = current_device_not_hopper()) throw Error(str_cat("run_flash_timeline_sm90: ", *why));
  if (args.head_dim == 64 && args.lse != nullptr)  // the forward sends such a call to the fp32-row-sum kernel
    throw Error("run_flash_timeline_sm90: the D 64 tile-counter kernel writes no LSE; time it without one");
  constexpr int kConsumers = 2;
  const std::int64_t tiles = args.batch * args.heads * ((args.seq_q + 127) / 128);  // 128-row CTAs at both head dims
  if (tiles > 0x7fffffffll) throw Error("run_flash_timeline_sm90: the problem exceeds the kernel's grid");
  const std::size_t words = static_cast<std::size_t>(tiles) * kConsumers * kTimelineWords;
  // 8-byte words in a device tensor (freed in stream order); zeros mark what was never written.
  const Tensor device_words = Tensor::empty({static_cast<std::int64_t>(words)}, DType::fp64, Device::cuda);
  auto* records = static_cast<std::uint64_t*>(device_words.raw());
  ATTNPROF_CUDA_CHECK(cudaMemsetAsync(records, 0, words * sizeof(std::uint64_t), stream));
  constexpr bool kTimeline = true;
  if (args.head_dim == 64)
    launch_typed<TileCounterTraits<64, kTimeline>, __nv_bfloat16, TileCounterScheduler>(args, stream, records);
  else
    launch_typed<TileCounterTraits<128, kTimeline>, __nv_bfloat16, TileCounterScheduler>(args, stream, records);
  std::vector<std::uint64_t> host(words);
  ATTNPROF_CUDA_CHECK(
      cudaMemcpyAsync(host.data(), records, words * sizeof(std::uint64_t), cudaMemcpyDeviceToHost, stream));
  ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
  return decode_flash_timeline(host, kConsumers);
}

}  // namespace attnprof::cuda::hopper
