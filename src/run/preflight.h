#pragma once
// Memory preflight: before allocating, estimate what one run needs and refuse (with the estimate,
// the limit that binds and the largest S that fits) when that is more than the process may use.
#include <attnprof/attention.h>
#include <attnprof/variant.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace attnprof {

// q, k, v, out, the fp64 reference rows and the variant's workspace; saturates at INT64_MAX. For
// a backward or train pass also dO, dq, dk, dv, the fp64 copies the gradient check makes, and the
// larger of the forward's workspace and the backward's (Variant::backward_workspace_estimate).
std::int64_t estimate_run_bytes(const AttentionSpec& spec, const Variant& variant, Pass pass = Pass::forward);
// MemAvailable (bytes) from the text of /proc/meminfo; nullopt when absent.
std::optional<std::int64_t> parse_mem_available(const std::string& meminfo);
// VmSize (bytes) from the text of /proc/self/status; nullopt when absent.
std::optional<std::int64_t> parse_vm_size(const std::string& status);
// The memory cgroup paths of /proc/self/cgroup: the v2 path ("0::PATH") and the v1 path of the
// "memory" controller ("N:...memory...:PATH"); empty when that line is absent.
struct CgroupPaths {
  std::string v2;
  std::string v1_memory;
};
CgroupPaths parse_proc_cgroup(const std::string& text);
// The value of "KEY VALUE" in the text of a cgroup's memory.stat; nullopt when absent.
std::optional<std::int64_t> parse_cgroup_stat(const std::string& stat, std::string_view key);
// The least (limit - usage) over the cgroup at `path` under `root` and each of its ancestors up to
// `root` (a limit set on a parent binds its children too); nullopt when none has a limit file.
// The usage is usage_file's less the reclaimable page cache, memory.stat's `inactive_file_key`
// (v2 "inactive_file"; v1 "total_inactive_file", which counts the descendants as v1's usage does).
std::optional<std::int64_t> cgroup_headroom(const std::filesystem::path& root, const std::string& path,
                                            const char* limit_file, const char* usage_file,
                                            const char* inactive_file_key);

// Bytes the process may still take, and which limit says so.
struct MemoryLimit {
  std::int64_t bytes = 0;
  std::string source;  // "MemAvailable", "ulimit -v (RLIMIT_AS)", "cgroup memory.max", ...
};
// The tightest of MemAvailable, RLIMIT_AS less the address space already mapped, and the memory
// cgroup's limit less its usage (v2 memory.max, v1 memory.limit_in_bytes, over the cgroup and its
// ancestors; the inactive page cache not counted as used) on the CPU; cudaMemGetInfo's free bytes
// on the GPU. nullopt when nothing is known.
std::optional<MemoryLimit> memory_limit(Device device);
// memory_limit(device)'s bytes.
std::optional<std::int64_t> free_device_bytes(Device device);
// The largest S (seq_q = seq_k = S, other sizes kept) whose estimate fits in `free_bytes`; 0 if none.
std::int64_t largest_fitting_seq(const AttentionSpec& spec, const Variant& variant, std::int64_t free_bytes,
                                 Pass pass = Pass::forward);
// The largest seq_k (seq_q and the other sizes kept) whose estimate fits; 0 if none. preflight_memory
// names it for a shape with fewer query rows than keys (decode against a KV cache).
std::int64_t largest_fitting_seq_k(const AttentionSpec& spec, const Variant& variant, std::int64_t free_bytes,
                                   Pass pass = Pass::forward);
// Throws UsageError when the estimate exceeds the memory limit, naming the limit.
void preflight_memory(const AttentionSpec& spec, const Variant& variant, Pass pass = Pass::forward);

}  // namespace attnprof
