#include "run/preflight.h"

#include <attnprof/error.h>
#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <string>

#include "ops/backend.h"
#include "report/insights.h"

namespace attnprof {

std::int64_t estimate_run_bytes(const AttentionSpec& spec, const Variant& variant) {
  double element = static_cast<double>(dtype_size(spec.dtype));
  double q_and_out = 2.0 * spec.batch * spec.heads * spec.seq_q * spec.head_dim * element;
  double kv = 2.0 * spec.batch * spec.kv_heads * spec.seq_k * spec.head_dim * element;
  double workspace = static_cast<double>(variant.workspace_estimate(spec));
  double total = q_and_out + kv + workspace;
  return total > 9.0e18 ? INT64_MAX : static_cast<std::int64_t>(total);
}

std::optional<std::int64_t> parse_mem_available(const std::string& meminfo) {
  std::istringstream in(meminfo);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    std::int64_t kib = 0;
    std::string unit;
    if (fields >> kib >> unit && unit == "kB") return kib * 1024;
  }
  return std::nullopt;
}

std::optional<std::int64_t> free_device_bytes(Device device) {
  if (device == Device::cuda) return ops::backend(Device::cuda).free_bytes();
  std::ifstream in("/proc/meminfo");
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return parse_mem_available(text.str());
}

std::int64_t largest_fitting_seq(const AttentionSpec& spec, const Variant& variant, std::int64_t free_bytes) {
  auto fits = [&](std::int64_t s) {
    AttentionSpec probe = spec;
    probe.seq_q = probe.seq_k = s;
    return estimate_run_bytes(probe, variant) <= free_bytes;
  };
  if (!fits(1)) return 0;
  std::int64_t lo = 1, hi = 2;
  while (hi < (std::int64_t{1} << 40) && fits(hi)) {
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > 1) {
    std::int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

void preflight_memory(const AttentionSpec& spec, const Variant& variant) {
  std::optional<std::int64_t> free_bytes = free_device_bytes(spec.device);
  if (!free_bytes) return;
  std::int64_t needed = estimate_run_bytes(spec, variant);
  if (needed <= *free_bytes) return;
  std::int64_t largest = largest_fitting_seq(spec, variant, *free_bytes);
  throw UsageError(fmt::format(
      "--seq: {} {} needs about {} on {} but only {} is free; the largest --seq that fits with these other sizes is {}",
      variant.name(), spec.shape_string(), report::format_bytes(static_cast<double>(needed)), device_name(spec.device), report::format_bytes(static_cast<double>(*free_bytes)),
      largest));
}

}  // namespace attnprof
