// The insight rules about single kernels: occupancy from the launch footprint (capped by a grid
// under one wave), what a recorded 0% means, and Hopper's warp-specialised attention kernels
// (report/insights.h).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "report/insight_parts.h"
#include "report/insights.h"
#include "report/occupancy.h"
#include "report/recorded_occupancy.h"

namespace attnprof::report {
namespace {

using trace::Category;

struct KernelSummary {
  const WorkItem* item = nullptr;
  double ns = 0;
  std::int64_t max_ctas = 0;  // the largest grid of its launches
};
// Distinct GPU kernels with a footprint, longest total time first.
std::vector<KernelSummary> distinct_kernels(const TraceWork& work, bool (*keep)(const WorkItem&)) {
  std::map<std::string, KernelSummary> by_name;
  for (const Forward& f : work.forwards) {
    for (const WorkItem& w : f.work) {
      if (!keep(w)) continue;
      KernelSummary& k = by_name[w.event->name];
      if (!k.item) k.item = &w;
      k.ns += static_cast<double>(w.event->dur_ns);
      if (w.event->launch) k.max_ctas = std::max(k.max_ctas, grid_ctas(*w.event->launch));
    }
  }
  std::vector<KernelSummary> list;
  for (auto& [name, k] : by_name) list.push_back(k);
  std::stable_sort(list.begin(), list.end(), [](const KernelSummary& a, const KernelSummary& b) { return a.ns > b.ns; });
  return list;
}

// "; the trace records 13%", with why when it records 0.
std::string recorded_occupancy(const trace::DeviceProperties& device, const trace::KernelLaunch& launch,
                               const Occupancy& occ) {
  if (!launch.recorded_occupancy_pct) return {};
  std::string text = fmt::format("; the trace records {}%", format_percent(*launch.recorded_occupancy_pct));
  const RecordedZero zero = recorded_zero(device, launch, occ);
  if (zero.cause == ZeroCause::shared_over_default) text += ", not a measurement: " + zero.text;
  if (zero.cause == ZeroCause::grid_rounds_down) text += ", Kineto's grid-counting figure rounded";
  return text;
}

// "; its grid of 32 CTAs is under one wave (…)" for the kernel's largest grid, or nothing.
std::string grid_note(const trace::DeviceProperties& device, const KernelSummary& k, const Occupancy& occ) {
  auto cap = grid_cap(device, k.max_ctas, occ);
  return cap ? "; " + cap->text : std::string();
}

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// Groups of kernels that share one text, at most three, in the order first seen.
struct TextGroups {
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;  // text -> short kernel names
  std::vector<std::string> about;
  void add(const std::string& text, const std::string& kernel) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == text; });
    if (it == groups.end()) {
      if (groups.size() == 3) return;
      groups.push_back({text, {}});
      it = groups.end() - 1;
    }
    it->second.push_back(short_kernel_name(kernel, 60));
    about.push_back(kernel);
  }
  std::vector<std::string> parts(const char* between) const {
    std::vector<std::string> out;
    for (const auto& [text, kernels] : groups) out.push_back(join(kernels, ", ") + between + text);
    return out;
  }
};

// Low-occupancy kernels, grouped by their arithmetic (at most three groups), of known design or not.
std::optional<Insight> low_occupancy_of(const trace::Trace& trace, const TraceWork& work, bool known, const char* code) {
  TextGroups groups;  // arithmetic + limiter (+ grid) (+ design) -> kernels
  for (const KernelSummary& k : distinct_kernels(work, is_kernel_with_footprint)) {
    const trace::DeviceProperties* device = find_device(trace, k.item->event->device);
    if (!device) continue;
    const std::optional<std::string> design = known_kernel_design(k.item->event->name);
    if (design.has_value() != known) continue;
    auto occ = estimate_occupancy(*device, *k.item->event->launch);
    if (!occ || occ->percent > kLowOccupancyPercent) continue;
    if (occ->limiter.find("registers") == std::string::npos && occ->limiter.find("shared") == std::string::npos) continue;
    std::string key = fmt::format("{} (limited by {}{}){}", occ->arithmetic, occ->limiter,
                                  recorded_occupancy(*device, *k.item->event->launch, *occ),
                                  grid_note(*device, k, *occ));
    if (design) key += ", by design: " + *design;
    groups.add(key, k.item->event->name);
  }
  if (groups.groups.empty()) return std::nullopt;
  return Insight{code, join(groups.parts(": "), "; "), groups.about};
}

}  // namespace

std::optional<std::string> known_kernel_design(const std::string& kernel_name) {
  std::string name = kernel_name;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (contains(name, "attnprof::") && contains(name, "flash_decode_splitkv"))
    return "attnprof's split-KV decode streams K and V through 3 shared-memory stages per warp (~100 KiB a CTA of "
           "4 warps, 2 CTAs per SM; ~196 KiB a CTA of 8 warps, 1 per SM) and keeps its 16 packed query rows and "
           "their output accumulator in registers: enough bytes in flight to keep HBM busy";
  if (contains(name, "attnprof::") && contains(name, "flash_backward_sm90_kernel"))
    return "attnprof's sm_90a flash backward keeps a CTA's 128 keys of K and V in shared memory and their dK and "
           "dV accumulators in registers (240 a consumer thread), walking the query blocks: 1 CTA per SM";
  if (contains(name, "attnprof::") && (contains(name, "attention_forward_kernel") || contains(name, "flash_forward_sm90")))
    return "attnprof's fused attention keeps a Q tile, its scores and the output accumulator on chip per CTA";
  if (contains(name, "cudnn") && (contains(name, "sdpa") || contains(name, "fmha") || contains(name, "flash")))
    return "cuDNN's fused attention keeps a Q tile, its scores and the output accumulator on chip per CTA";
  if (contains(name, "flash_fwd") || contains(name, "flash_bwd") || contains(name, "flashattn") ||
      contains(name, "flash::"))
    return "FlashAttention keeps a Q tile, its scores and the output accumulator in registers per CTA";
  if (contains(name, "fmha_cutlass"))
    return "CUTLASS memory-efficient attention keeps a Q tile and its accumulator in registers per CTA";
  if (name.rfind("nvjet", 0) == 0)
    return "cuBLAS's nvjet GEMMs are warp-specialised (a TMA producer warpgroup feeding wgmma consumers) with "
           "large tiles in registers and shared memory";
  return std::nullopt;
}

namespace rules {

std::optional<Insight> low_occupancy_by_design(const trace::Trace& trace, const TraceWork& work) {
  return low_occupancy_of(trace, work, /*known=*/true, "low_occupancy_by_design");
}

std::optional<Insight> low_occupancy(const trace::Trace& trace, const TraceWork& work) {
  return low_occupancy_of(trace, work, /*known=*/false, "low_occupancy");
}

std::optional<Insight> occupancy_recorded_zero(const trace::Trace& trace, const TraceWork& work) {
  auto recorded_zero_kernel = [](const WorkItem& w) {
    return is_kernel_with_footprint(w) && w.event->launch->recorded_occupancy_pct &&
           *w.event->launch->recorded_occupancy_pct == 0;
  };
  TextGroups by_shared;               // over the 48 KiB default: why + our estimate -> kernels
  std::vector<std::string> by_grid;   // "kernel: 8 CTAs / 132 SMs × … = 0.38%", longest first
  std::vector<std::string> no_cause;  // short names
  std::vector<std::string> about;
  std::size_t kernels = 0, grid_kernels = 0;
  for (const KernelSummary& k : distinct_kernels(work, recorded_zero_kernel)) {
    const trace::Event& e = *k.item->event;
    const trace::DeviceProperties* device = find_device(trace, e.device);
    if (!device) continue;
    auto occ = estimate_occupancy(*device, *e.launch);
    if (!occ) continue;
    ++kernels;
    const RecordedZero zero = recorded_zero(*device, *e.launch, *occ);
    if (zero.cause == ZeroCause::shared_over_default) {
      by_shared.add(fmt::format("{}; estimated {}% per SM ({} block{} of {} warps, limited by {}){}", zero.text,
                                format_percent(occ->percent), occ->blocks_per_sm, occ->blocks_per_sm == 1 ? "" : "s",
                                occ->warps_per_block, occ->limiter, grid_note(*device, k, *occ)),
                    e.name);
    } else if (zero.cause == ZeroCause::grid_rounds_down) {
      if (++grid_kernels > 3) continue;
      by_grid.push_back(short_kernel_name(e.name, 60) + " " + zero.text);
      about.push_back(e.name);
    } else if (no_cause.size() < 3) {
      no_cause.push_back(short_kernel_name(e.name, 60));
      about.push_back(e.name);
    }
  }
  if (kernels == 0) return std::nullopt;
  std::vector<std::string> parts = by_shared.parts(": ");
  if (grid_kernels > 0) {
    parts.push_back(fmt::format("{} kernel{} whose grid keeps Kineto's figure under 0.5% ({}{})", grid_kernels,
                                grid_kernels == 1 ? "" : "s", join(by_grid, ", "),
                                grid_kernels > by_grid.size() ? ", …" : ""));
  }
  if (!no_cause.empty()) parts.push_back("no cause in the footprint of " + join(no_cause, ", "));
  std::vector<std::string> all_about = by_shared.about;
  for (const std::string& k : about) add_unique(all_about, k);
  return Insight{"occupancy_recorded_zero",
                 fmt::format("the trace records 0% est. achieved occupancy for {} kernel{}; Kineto writes 0 when its "
                             "occupancy calculator fits no block or its figure, which counts the grid, rounds below "
                             "0.5%, so 0 is not a measurement: {}",
                             kernels, kernels == 1 ? "" : "s", join(parts, "; ")),
                 all_about};
}

std::optional<Insight> warp_specialized(const trace::Trace& trace, const TraceWork& work) {
  auto hopper_attention = [](const WorkItem& w) {
    if (!is_kernel_with_footprint(w)) return false;
    std::string name = w.event->name;
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    const bool hopper = name.find("sm90") != std::string::npos || name.find("wgmma") != std::string::npos;
    const bool attention = name.find("flash") != std::string::npos || name.find("sdpa") != std::string::npos ||
                           name.find("attention") != std::string::npos;
    const auto& b = w.event->launch->block;
    const std::int64_t threads = b[0] * b[1] * b[2];
    return hopper && attention && threads >= 256 && threads % 128 == 0;
  };
  std::vector<std::string> parts, about;
  for (const KernelSummary& k : distinct_kernels(work, hopper_attention)) {
    const trace::Event& e = *k.item->event;
    const trace::DeviceProperties* device = find_device(trace, e.device);
    if (!device || device->compute_major != 9) continue;
    const auto occ = estimate_occupancy(*device, *e.launch);
    if (!occ) continue;
    const std::int64_t warpgroups = occ->threads_per_block / 128;
    parts.push_back(fmt::format(
        "{}: {} warpgroups of 128 threads per CTA, the shape of Hopper's warp-specialised attention (a TMA "
        "producer warpgroup and {} wgmma consumers); the {} registers per thread are the launch's average, which "
        "setmaxnreg moves from the producer to the consumers, so the CTA holds {} × {} = {} of {} registers and "
        "{} CTA{} per SM ({} KiB of shared memory: the Q tile, the K/V stages and any staging tile) is the design",
        short_kernel_name(e.name, 60), warpgroups, warpgroups - 1, occ->registers_per_thread, occ->registers_per_thread,
        occ->threads_per_block, group_digits(occ->registers_per_thread * occ->threads_per_block),
        group_digits(device->regs_per_sm), occ->blocks_per_sm, occ->blocks_per_sm == 1 ? "" : "s",
        occ->shared_per_block / 1024));
    about.push_back(e.name);
    if (parts.size() == 2) break;
  }
  if (parts.empty()) return std::nullopt;
  return Insight{"warp_specialized", join(parts, "; "), about};
}

}  // namespace rules
}  // namespace attnprof::report
