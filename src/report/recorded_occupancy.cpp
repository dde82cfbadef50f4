#include "report/recorded_occupancy.h"

#include <fmt/format.h>

#include <algorithm>

namespace attnprof::report {

std::int64_t grid_ctas(const trace::KernelLaunch& launch) {
  const auto& g = launch.grid;
  if (g[0] <= 0) return 0;
  return g[0] * std::max<std::int64_t>(g[1], 1) * std::max<std::int64_t>(g[2], 1);
}

RecordedZero recorded_zero(const trace::DeviceProperties& device, const trace::KernelLaunch& launch,
                           const Occupancy& occ) {
  RecordedZero zero;
  if (!launch.recorded_occupancy_pct || *launch.recorded_occupancy_pct != 0) return zero;
  if (device.shared_per_block > 0 && occ.shared_per_block > device.shared_per_block) {
    zero.cause = ZeroCause::shared_over_default;
    zero.text = fmt::format("no block of {} B fits the {} B Kineto's calculator assumes without opt-in",
                            group_digits(occ.shared_per_block), group_digits(device.shared_per_block));
    return zero;
  }
  const std::int64_t ctas = grid_ctas(launch);
  const std::int64_t threads_per_sm = sm_limits(device).max_threads_per_sm;
  if (ctas <= 0 || device.num_sms <= 0 || threads_per_sm <= 0) return zero;
  const double blocks = std::min(static_cast<double>(occ.blocks_per_sm),
                                 static_cast<double>(ctas) / static_cast<double>(device.num_sms));
  const double percent = 100.0 * blocks * static_cast<double>(occ.threads_per_block) /
                         static_cast<double>(threads_per_sm);
  if (percent >= 0.5) return zero;
  zero.cause = ZeroCause::grid_rounds_down;
  zero.kineto_percent = percent;
  zero.text = fmt::format("{} CTA{} / {} SMs × {} threads / {} = {:.2f}%", ctas, ctas == 1 ? "" : "s",
                          device.num_sms, occ.threads_per_block, group_digits(threads_per_sm), percent);
  return zero;
}

std::optional<GridCap> grid_cap(const trace::DeviceProperties& device, std::int64_t ctas, const Occupancy& occ) {
  if (ctas <= 0 || device.num_sms <= 0 || occ.blocks_per_sm <= 0) return std::nullopt;
  GridCap cap;
  cap.ctas = ctas;
  cap.slots = device.num_sms * occ.blocks_per_sm;
  if (ctas >= cap.slots) return std::nullopt;
  cap.percent = occ.percent * static_cast<double>(ctas) / static_cast<double>(cap.slots);
  cap.text = fmt::format("its grid of {} CTA{} is under one wave ({} SMs × {} block{} = {} slots): {}/{} of {}% = "
                         "{}% of the GPU's warps at most",
                         ctas, ctas == 1 ? "" : "s", device.num_sms, occ.blocks_per_sm,
                         occ.blocks_per_sm == 1 ? "" : "s", group_digits(cap.slots), ctas, group_digits(cap.slots),
                         format_percent(occ.percent), format_percent(cap.percent));
  return cap;
}

}  // namespace attnprof::report
