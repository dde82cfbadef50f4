#pragma once
// Theoretical occupancy of one kernel launch from its footprint (registers per thread, threads
// per block, shared memory per block) and the device's per-SM limits — the CUDA occupancy
// calculator's arithmetic, for every launch API (Kineto records 0% for cuLaunchKernelEx).
#include <attnprof/trace.h>

#include <cstdint>
#include <optional>
#include <string>

namespace attnprof::report {

// Per-SM limits; what the trace's deviceProperties leave out comes from the compute capability.
struct SmLimits {
  std::int64_t regs_per_sm = 65536;
  std::int64_t regs_per_block = 65536;
  std::int64_t max_threads_per_sm = 2048;
  std::int64_t max_blocks_per_sm = 32;
  std::int64_t shared_per_sm = 0;
  std::int64_t shared_reserved_per_block = 0;  // the driver keeps 1 KiB per block from sm_80 on
  std::int64_t warp_size = 32;
  std::int64_t reg_alloc_unit = 256;  // registers are given to a warp in units of 256
  std::int64_t max_warps_per_sm() const { return max_threads_per_sm / warp_size; }
};
SmLimits sm_limits(const trace::DeviceProperties& device);

struct Occupancy {
  std::int64_t threads_per_block = 0;
  std::int64_t warps_per_block = 0;
  std::int64_t registers_per_thread = 0;
  std::int64_t shared_per_block = 0;  // as launched, without the reserved KiB
  std::int64_t blocks_by_registers = 0;
  std::int64_t blocks_by_shared = 0;   // max_blocks_per_sm when the kernel uses none
  std::int64_t blocks_by_threads = 0;
  std::int64_t blocks_by_limit = 0;
  std::int64_t blocks_per_sm = 0;
  std::int64_t active_warps = 0;
  std::int64_t max_warps = 0;
  double percent = 0;
  std::string limiter;     // "registers", "shared memory", "threads", "blocks per SM" (joined with " and ")
  std::string arithmetic;  // "255 regs × 128 threads = 32,640 of 65,536 → 2 blocks → 8 of 64 warps = 12.5%"
};

// nullopt when the footprint lacks the block size or the registers per thread.
std::optional<Occupancy> estimate_occupancy(const trace::DeviceProperties& device, const trace::KernelLaunch& launch);

// "32,640"
std::string group_digits(std::int64_t value);
// 12.5 -> "12.5", 25 -> "25", 18.75 -> "18.75"
std::string format_percent(double percent);

}  // namespace attnprof::report
