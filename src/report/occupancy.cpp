#include "report/occupancy.h"

#include <fmt/format.h>

#include <algorithm>

namespace attnprof::report {
namespace {

struct CapabilityLimits {
  std::int64_t max_threads_per_sm, max_blocks_per_sm, shared_per_sm, reserved_per_block;
};

// CUDA C Programming Guide, "Technical Specifications per Compute Capability".
CapabilityLimits capability_limits(std::int64_t major, std::int64_t minor) {
  const std::int64_t cc = major * 10 + minor;
  if (cc >= 120) return {1536, 32, 100 * 1024, 1024};
  if (cc >= 100) return {2048, 32, 228 * 1024, 1024};
  if (cc == 90) return {2048, 32, 228 * 1024, 1024};
  if (cc == 89) return {1536, 24, 100 * 1024, 1024};
  if (cc == 86 || cc == 87) return {1536, 16, cc == 87 ? 164 * 1024 : 100 * 1024, 1024};
  if (cc == 80) return {2048, 32, 164 * 1024, 1024};
  if (cc == 75) return {1024, 16, 64 * 1024, 0};
  if (cc >= 70) return {2048, 32, 96 * 1024, 0};
  return {2048, 32, 64 * 1024, 0};
}

std::int64_t round_up(std::int64_t value, std::int64_t unit) { return (value + unit - 1) / unit * unit; }

}  // namespace

std::string group_digits(std::int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

std::string format_percent(double percent) {
  std::string s = fmt::format("{:.2f}", percent);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

SmLimits sm_limits(const trace::DeviceProperties& device) {
  CapabilityLimits cap = capability_limits(device.compute_major, device.compute_minor);
  SmLimits limits;
  limits.warp_size = device.warp_size > 0 ? device.warp_size : 32;
  limits.regs_per_sm = device.regs_per_sm > 0 ? device.regs_per_sm : 65536;
  limits.regs_per_block = device.regs_per_block > 0 ? device.regs_per_block : limits.regs_per_sm;
  limits.max_threads_per_sm = device.max_threads_per_sm > 0 ? device.max_threads_per_sm : cap.max_threads_per_sm;
  limits.max_blocks_per_sm = device.max_blocks_per_sm > 0 ? device.max_blocks_per_sm : cap.max_blocks_per_sm;
  limits.shared_per_sm = device.shared_per_sm > 0 ? device.shared_per_sm : cap.shared_per_sm;
  limits.shared_reserved_per_block = cap.reserved_per_block;
  return limits;
}

std::optional<Occupancy> estimate_occupancy(const trace::DeviceProperties& device, const trace::KernelLaunch& launch) {
  const std::int64_t threads = launch.block[0] * std::max<std::int64_t>(launch.block[1], 1) *
                               std::max<std::int64_t>(launch.block[2], 1);
  if (threads <= 0 || launch.registers_per_thread <= 0) return std::nullopt;
  const SmLimits limits = sm_limits(device);

  Occupancy occ;
  occ.threads_per_block = threads;
  occ.warps_per_block = (threads + limits.warp_size - 1) / limits.warp_size;
  occ.registers_per_thread = launch.registers_per_thread;
  if (launch.shared_bytes >= 0) {
    occ.shared_per_block = launch.shared_bytes;
  } else {
    occ.shared_per_block = std::max<std::int64_t>(launch.static_shared_bytes, 0) +
                           std::max<std::int64_t>(launch.dynamic_shared_bytes, 0);
  }

  // Registers go to whole warps in allocation units; a block that needs more than a block may
  // have cannot launch at all.
  const std::int64_t regs_per_warp = round_up(occ.registers_per_thread * limits.warp_size, limits.reg_alloc_unit);
  const std::int64_t regs_per_block = regs_per_warp * occ.warps_per_block;
  occ.blocks_by_registers = regs_per_block > limits.regs_per_block ? 0 : limits.regs_per_sm / regs_per_block;
  const std::int64_t shared_needed = occ.shared_per_block > 0 ? occ.shared_per_block + limits.shared_reserved_per_block : 0;
  occ.blocks_by_shared = shared_needed > 0 ? (limits.shared_per_sm > 0 ? limits.shared_per_sm / shared_needed : 0)
                                           : limits.max_blocks_per_sm;
  occ.blocks_by_threads = limits.max_threads_per_sm / (occ.warps_per_block * limits.warp_size);
  occ.blocks_by_limit = limits.max_blocks_per_sm;
  occ.blocks_per_sm = std::min({occ.blocks_by_registers, occ.blocks_by_shared, occ.blocks_by_threads, occ.blocks_by_limit});
  occ.max_warps = limits.max_warps_per_sm();
  occ.active_warps = occ.blocks_per_sm * occ.warps_per_block;
  occ.percent = occ.max_warps > 0 ? 100.0 * static_cast<double>(occ.active_warps) / static_cast<double>(occ.max_warps) : 0;

  // Name every resource that reaches the minimum, then show the arithmetic of the first.
  std::vector<std::string> limiters;
  std::string first_arithmetic;
  auto note = [&](std::int64_t blocks, const char* what, std::string arithmetic) {
    if (blocks != occ.blocks_per_sm) return;
    limiters.emplace_back(what);
    if (first_arithmetic.empty()) first_arithmetic = std::move(arithmetic);
  };
  const std::int64_t raw_regs = occ.registers_per_thread * threads;
  std::string regs_text = fmt::format("{} regs × {} threads = {} of {}", occ.registers_per_thread, threads,
                                      group_digits(raw_regs), group_digits(limits.regs_per_sm));
  // The per-warp rounding is shown only where it changes the answer.
  if (regs_per_block != raw_regs && limits.regs_per_sm / raw_regs != occ.blocks_by_registers) regs_text += fmt::format(" ({} as allocated per warp)", group_digits(regs_per_block));
  note(occ.blocks_by_registers, "registers", regs_text);
  note(occ.blocks_by_shared, "shared memory",
       fmt::format("{} B shared{} per block of {} per SM", group_digits(occ.shared_per_block),
                   limits.shared_reserved_per_block > 0
                       ? fmt::format(" + {} reserved", group_digits(limits.shared_reserved_per_block))
                       : std::string(),
                   group_digits(limits.shared_per_sm)));
  note(occ.blocks_by_threads, "threads",
       fmt::format("{} threads per block of {} per SM", threads, group_digits(limits.max_threads_per_sm)));
  note(occ.blocks_by_limit, "blocks per SM", fmt::format("at most {} blocks per SM", limits.max_blocks_per_sm));
  for (std::size_t i = 0; i < limiters.size(); ++i) occ.limiter += (i ? " and " : "") + limiters[i];
  occ.arithmetic = fmt::format("{} → {} block{} → {} of {} warps = {}%", first_arithmetic, occ.blocks_per_sm,
                               occ.blocks_per_sm == 1 ? "" : "s", occ.active_warps, occ.max_warps,
                               format_percent(occ.percent));
  return occ;
}

}  // namespace attnprof::report
