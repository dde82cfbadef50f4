#pragma once
// Memory preflight: before allocating, estimate what one run needs and refuse (with the estimate
// and the largest S that fits) when that is more than the device has free.
#include <attnprof/attention.h>
#include <attnprof/variant.h>

#include <cstdint>
#include <optional>
#include <string>

namespace attnprof {

// q, k, v, out, the fp64 reference rows and the variant's workspace.
std::int64_t estimate_run_bytes(const AttentionSpec& spec, const Variant& variant);
// MemAvailable (bytes) from the text of /proc/meminfo; nullopt when absent.
std::optional<std::int64_t> parse_mem_available(const std::string& meminfo);
// MemAvailable on the CPU; cudaMemGetInfo's free bytes on the GPU. nullopt when unknown.
std::optional<std::int64_t> free_device_bytes(Device device);
// The largest S (seq_q = seq_k = S, other sizes kept) whose estimate fits in `free_bytes`; 0 if none.
std::int64_t largest_fitting_seq(const AttentionSpec& spec, const Variant& variant, std::int64_t free_bytes);
// Throws UsageError when the estimate exceeds the free bytes.
void preflight_memory(const AttentionSpec& spec, const Variant& variant);

}  // namespace attnprof
