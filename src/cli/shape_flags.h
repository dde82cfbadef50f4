#pragma once
// The shape and dtype flags shared by run, compare and sweep.
#include <attnprof/attention.h>

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace attnprof::cli {

struct ShapeFlags {
  std::string device;  // empty: cuda when present, else cpu (compare); cpu (run)
  std::int64_t batch = 8;
  std::int64_t heads = 16;
  std::optional<std::int64_t> kv_heads;  // default: heads
  std::int64_t seq = 1024;
  std::optional<std::int64_t> seq_k;  // default: seq
  std::int64_t head_dim = 64;
  std::string dtype = "bf16";
  bool causal = true;
  bool no_causal = false;
  std::optional<std::string> causal_align;  // top-left (default) | bottom-right; only with the causal mask
  std::string layout = "bhsd";
  int threads = 0;
  std::int64_t seed = 0;

  void add_to(CLI::App& app);
  // Parses names and checks sizes; throws UsageError naming the flag and the allowed values.
  AttentionSpec to_spec(Device default_device) const;
};

// Rejects integers that do not fit 64 bits (CLI11 alone would saturate them).
const CLI::Validator& strict_integer();
// Rejects an empty path: every flag naming a file or directory (--out, --dump, --plugin, report's
// DIR) takes it, so '' never means "/" or "." or the program itself.
const CLI::Validator& non_empty_path();

// The --causal-align flag shared by run, compare and sweep, and its check: an unknown value, or
// the flag beside --no-causal, throws UsageError naming the flag(s) and what is allowed.
CLI::Option* add_causal_align_flag(CLI::App& app, std::optional<std::string>& value);
CausalAlign causal_align_from_flags(const std::optional<std::string>& value, bool causal);

// cuda when a CUDA backend with a GPU is available, else cpu.
Device default_device();
// Applies --threads (OpenMP and the BLAS libraries); throws UsageError when out of range.
void apply_threads(int threads);

}  // namespace attnprof::cli
