#include "run/preflight.h"

#include <attnprof/error.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/bytes_text.h"
#include "core/saturating.h"
#include "ops/backend.h"

namespace attnprof {
namespace {

// The whole of a small text file (procfs, cgroupfs); nullopt when it cannot be read.
std::optional<std::string> read_small_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// "NAME:   123 kB" in a procfs text, in bytes.
std::optional<std::int64_t> parse_kib_field(const std::string& text, std::string_view name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() <= name.size() || line.compare(0, name.size(), name) != 0 || line[name.size()] != ':') continue;
    std::istringstream fields(line.substr(name.size() + 1));
    std::int64_t kib = 0;
    std::string unit;
    if (fields >> kib >> unit && unit == "kB" && kib >= 0) return sat_mul(kib, 1024);
  }
  return std::nullopt;
}

// A cgroup file holding one number ("max" reads as no limit).
std::optional<std::int64_t> read_cgroup_number(const std::filesystem::path& path) {
  std::optional<std::string> text = read_small_file(path.string());
  if (!text) return std::nullopt;
  while (!text->empty() && (text->back() == '\n' || text->back() == ' ')) text->pop_back();
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size() || value < 0) return std::nullopt;
  return value;
}

void tighten(std::optional<MemoryLimit>& current, std::optional<std::int64_t> bytes, const char* source) {
  if (bytes && (!current || *bytes < current->bytes)) current = MemoryLimit{*bytes, source};
}

}  // namespace

std::optional<std::int64_t> parse_cgroup_stat(const std::string& stat, std::string_view key) {
  std::istringstream in(stat);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() <= key.size() || line.compare(0, key.size(), key) != 0 || line[key.size()] != ' ') continue;
    std::int64_t value = 0;
    const char* first = line.data() + key.size() + 1;
    auto [end, ec] = std::from_chars(first, line.data() + line.size(), value);
    if (ec == std::errc() && end == line.data() + line.size() && value >= 0) return value;
  }
  return std::nullopt;
}

std::optional<std::int64_t> cgroup_headroom(const std::filesystem::path& root, const std::string& path,
                                            const char* limit_file, const char* usage_file,
                                            const char* inactive_file_key) {
  std::vector<std::filesystem::path> dirs{root};
  for (const std::filesystem::path& part : std::filesystem::path(path).relative_path()) {
    if (!part.empty() && part != "." && part != "..") dirs.push_back(dirs.back() / part);
  }
  std::optional<std::int64_t> least;
  for (const std::filesystem::path& dir : dirs) {
    std::optional<std::int64_t> limit = read_cgroup_number(dir / limit_file);
    if (!limit) continue;
    // The usage counts the page cache; its inactive part is dropped before the cgroup runs out
    // (the kernel reclaims it under the limit), so it is room, not use.
    std::int64_t usage = read_cgroup_number(dir / usage_file).value_or(0);
    if (std::optional<std::string> stat = read_small_file((dir / "memory.stat").string())) {
      usage -= std::min(usage, parse_cgroup_stat(*stat, inactive_file_key).value_or(0));
    }
    const std::int64_t room = std::max<std::int64_t>(0, *limit - usage);
    if (!least || room < *least) least = room;
  }
  return least;
}

std::int64_t estimate_run_bytes(const AttentionSpec& spec, const Variant& variant, Pass pass) {
  const std::int64_t element = static_cast<std::int64_t>(dtype_size(spec.dtype));
  const std::int64_t q_and_out = sat_product({2, spec.batch, spec.heads, spec.seq_q, spec.head_dim, element});
  const std::int64_t kv = sat_product({2, spec.batch, spec.kv_heads, spec.seq_k, spec.head_dim, element});
  // A plug-in's estimate that wrapped below zero stands for more than can be counted.
  auto counted = [](std::int64_t bytes) { return bytes < 0 ? std::numeric_limits<std::int64_t>::max() : bytes; };
  std::int64_t workspace = counted(variant.workspace_estimate(spec));
  if (pass == Pass::forward) return sat_sum({q_and_out, kv, workspace});
  workspace = std::max(workspace, counted(variant.backward_workspace_estimate(spec)));
  // dO and dq as q and out, dk and dv as k and v; the gradient check's fp64 q, k, v, dO, dq, dk, dv.
  // (q_and_out + kv at 8 bytes an element counts four of those seven tensors; twice it, all seven.)
  const std::int64_t fp64_copies = sat_product({2, 8 / std::max<std::int64_t>(element, 1), sat_add(q_and_out, kv)});
  return sat_sum({q_and_out, kv, q_and_out, kv, workspace, fp64_copies});
}

std::optional<std::int64_t> parse_mem_available(const std::string& meminfo) {
  return parse_kib_field(meminfo, "MemAvailable");
}

std::optional<std::int64_t> parse_vm_size(const std::string& status) { return parse_kib_field(status, "VmSize"); }

CgroupPaths parse_proc_cgroup(const std::string& text) {
  CgroupPaths paths;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string::npos ? std::string::npos : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string id = line.substr(0, first);
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (id == "0" && controllers.empty()) {
      paths.v2 = path;
      continue;
    }
    std::istringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');) {
      if (name == "memory") paths.v1_memory = path;
    }
  }
  return paths;
}

std::optional<MemoryLimit> memory_limit(Device device) {
  if (device == Device::cuda) {
    std::optional<std::int64_t> free = ops::backend(Device::cuda).free_bytes();
    if (!free) return std::nullopt;
    return MemoryLimit{*free, "free device memory"};
  }
  std::optional<MemoryLimit> limit;
  if (auto meminfo = read_small_file("/proc/meminfo")) tighten(limit, parse_mem_available(*meminfo), "MemAvailable");
  rlimit address_space{};
  if (::getrlimit(RLIMIT_AS, &address_space) == 0 && address_space.rlim_cur != RLIM_INFINITY) {
    const std::int64_t cap = address_space.rlim_cur > static_cast<rlim_t>(std::numeric_limits<std::int64_t>::max())
                                 ? std::numeric_limits<std::int64_t>::max()
                                 : static_cast<std::int64_t>(address_space.rlim_cur);
    std::optional<std::string> status = read_small_file("/proc/self/status");
    const std::int64_t mapped = status ? parse_vm_size(*status).value_or(0) : 0;
    tighten(limit, std::max<std::int64_t>(0, cap - mapped), "ulimit -v (RLIMIT_AS)");
  }
  if (auto text = read_small_file("/proc/self/cgroup")) {
    const CgroupPaths paths = parse_proc_cgroup(*text);
    if (!paths.v2.empty()) {
      tighten(limit, cgroup_headroom("/sys/fs/cgroup", paths.v2, "memory.max", "memory.current", "inactive_file"),
              "cgroup memory.max");
    }
    if (!paths.v1_memory.empty()) {
      tighten(limit,
              cgroup_headroom("/sys/fs/cgroup/memory", paths.v1_memory, "memory.limit_in_bytes",
                              "memory.usage_in_bytes", "total_inactive_file"),
              "cgroup memory.limit_in_bytes");
    }
  }
  return limit;
}

std::optional<std::int64_t> free_device_bytes(Device device) {
  std::optional<MemoryLimit> limit = memory_limit(device);
  if (!limit) return std::nullopt;
  return limit->bytes;
}

namespace {
// The largest S ≥ 1 with fits(S) (fits is monotonic), 0 if none.
template <class Fits>
std::int64_t largest_fitting(const Fits& fits) {
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
}  // namespace

std::int64_t largest_fitting_seq(const AttentionSpec& spec, const Variant& variant, std::int64_t free_bytes,
                                 Pass pass) {
  return largest_fitting([&](std::int64_t s) {
    AttentionSpec probe = spec;
    probe.seq_q = probe.seq_k = s;
    return estimate_run_bytes(probe, variant, pass) <= free_bytes;
  });
}

std::int64_t largest_fitting_seq_k(const AttentionSpec& spec, const Variant& variant, std::int64_t free_bytes,
                                   Pass pass) {
  return largest_fitting([&](std::int64_t s) {
    AttentionSpec probe = spec;
    probe.seq_k = s;
    return estimate_run_bytes(probe, variant, pass) <= free_bytes;
  });
}

void preflight_memory(const AttentionSpec& spec, const Variant& variant, Pass pass) {
  std::optional<MemoryLimit> limit = memory_limit(spec.device);
  if (!limit) return;
  std::int64_t needed = estimate_run_bytes(spec, variant, pass);
  if (needed <= limit->bytes) return;
  const std::string needed_text = needed == std::numeric_limits<std::int64_t>::max()
                                      ? std::string("more than 8 EiB")
                                      : "about " + format_bytes(static_cast<double>(needed));
  // Fewer query rows than keys (a decode step against a KV cache): the keys are what to cut.
  if (spec.seq_q < spec.seq_k)
    throw UsageError(fmt::format(
        "seq_k: {} {} needs {} on {} but only {} is free ({}); the largest seq_k that fits with seq_q {} and these "
        "other sizes is {}",
        variant.name(), spec.shape_string(), needed_text, device_name(spec.device),
        format_bytes(static_cast<double>(limit->bytes)), limit->source, spec.seq_q,
        largest_fitting_seq_k(spec, variant, limit->bytes, pass)));
  throw UsageError(fmt::format(
      "seq_q: {} {} needs {} on {} but only {} is free ({}); the largest seq_q that fits with these other sizes is {}",
      variant.name(), spec.shape_string(), needed_text, device_name(spec.device),
      format_bytes(static_cast<double>(limit->bytes)), limit->source,
      largest_fitting_seq(spec, variant, limit->bytes, pass)));
}

}  // namespace attnprof
