#pragma once
// Host side of the sm_90a `flash` forward (wgmma + TMA + mbarriers, warp specialised; the kernel's
// roles are described in flash_traits.cuh) and the choice between it and the mma.sync kernel
// (flash_forward.cu) that launch_flash_attention makes on every call.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cuda/fused_attention.h"
#include "cuda/hopper/flash_timeline.h"

namespace attnprof::cuda::hopper {

// sm80: flash_forward.cu's mma.sync kernel. cta_per_tile: the sm_90a kernel with FA3's schedule
// (S·Kᵀ of the next tile and P·V of the current one in flight together, softmax under the P·V, the
// consumer warpgroups taking turns at the tensor cores) and FA3's tiles (D 64: 192 query rows, 3
// consumer warpgroups; D 96, 128, 192, 256: 128 rows, 2), one CTA per query tile, longest first. tile_counter: the
// same schedule on one CTA per SM, each CTA's producer drawing its next query tile from a device
// counter over an order in L2 sections (FA3's dynamic scheduler), with two Q buffers, a TMA-store
// epilogue a warp at a time and, at D 64, P's row sums from the tensor cores (a forward that wants
// the LSE runs the same schedule with fp32 row sums); built at kernel head dims 64 and 128 only. automatic (the default on Hopper): one of the
// two per problem, by auto_flash_schedule (flash_heuristics.h).
enum class FlashSchedule { sm80, automatic, cta_per_tile, tile_counter };

// automatic on a compute capability 9.0 device, sm80 elsewhere. KernelOverrides::flash_schedule
// (sm80|sm90-cta-per-tile|sm90-tile-counter; the command line's --flash-schedule) overrides it, so
// one run can time each. Throws UsageError naming flash_schedule for an sm90 one on a device
// without it.
FlashSchedule flash_schedule_choice();

// nullopt when the current device can run the sm_90a kernels; otherwise why not, one line.
std::optional<std::string> hopper_unavailable_reason();
// The same, asked once per device (it costs four runtime calls; the launchers ask on every call).
std::optional<std::string> current_device_not_hopper();

// Whether the sm_90a kernel takes head dim `head_dim`: a multiple of 8 from 8 to 256 (kernels
// specialised for 64, 96, 128, 192 and 256; the others run on the next larger one). Host
// arithmetic only: no device is asked.
bool flash_sm90_takes_head_dim(std::int64_t head_dim);

// The sm_90a kernel: bf16/fp16, head_dim a multiple of 8 from 8 to 256 (flash_sm90_takes_head_dim),
// causal (j <= i + causal_offset) or not, GQA, any strides with unit stride in d and 16-byte aligned
// rows, optional LSE. Does not synchronise. Throws UsageError for a dtype or head dim it does not take
// (naming the parameter) or a tile_counter schedule at a head dim it has no kernel for (naming
// flash_schedule), Error for a device that is not compute capability 9.0, a problem beyond its grid,
// or a failed CUDA call.
void launch_flash_attention_sm90(const FusedAttentionArgs& args, cudaStream_t stream,
                                 FlashSchedule schedule = FlashSchedule::automatic);

// One tile_counter forward through its timeline build (the same kernel plus clock reads at each
// pass's start, Q arrival, main loop end and epilogue end and at each Q issue; flash_timeline.h),
// returning a record per (query tile, consumer warpgroup). bf16, head_dim exactly 64 or 128 (UsageError
// otherwise), no LSE at D 64 (Error); synchronises.
std::vector<FlashTileTiming> run_flash_timeline_sm90(const FusedAttentionArgs& args, cudaStream_t stream);

}  // namespace attnprof::cuda::hopper
