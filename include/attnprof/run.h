#pragma once
// One profiled run of one variant: what `attnprof run` prints and `compare` tabulates.
#include <attnprof/attention.h>
#include <attnprof/kernel_overrides.h>
#include <attnprof/profiler.h>
#include <attnprof/time_stats.h>
#include <attnprof/trace.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attnprof {

struct RunOptions {
  AttentionSpec spec;
  std::string variant = "flash";
  int threads = 0;               // 0: all cores
  std::uint64_t seed = 0;
  bool profile = true;           // false: time without recording (--no-profile)
  // wait 1, warmup 1 (the blog's), then 10 kept steps: every time is a median of at least 10 forwards
  profiler::Schedule schedule{1, 1, 10, 1};
  int timed_forwards = 10;       // --no-profile: forwards timed after one warm-up
  bool record_shapes = true;
  bool profile_memory = true;
  std::string out_dir = "traces";  // empty: write no files
  std::string dump_dir;            // --dump: q.npy, k.npy, v.npy, out.npy
  int determinism_runs = -1;       // -1: 10 on a GPU, 0 on the CPU (its unit tests check it)
  KernelOverrides kernels;         // installed for the process before the run (set_kernel_overrides)
  // The kept forwards (schedule.active, or timed_forwards) are measured over this many calls of
  // run_variant (compare's rounds, compare.cpp); one call measures ceil(kept / rounds) of them.
  int rounds = 1;
};

struct RunResult {
  std::string variant;
  std::string summary;           // the variant's one line
  AttentionSpec spec;
  double median_ns = 0;          // per forward: device time on the GPU (kernels), wall time on the CPU
  double cpu_ns = 0;             // CPU time per forward (the attn_fwd range)
  TimeStats time;                // the per-forward samples behind median_ns (ns): count, spread
  TimeStats cpu_time;            // the per-forward samples behind cpu_ns (ns)
  std::vector<double> time_samples;      // the samples behind `time`, in the order measured (ns)
  std::vector<double> cpu_time_samples;  // the samples behind `cpu_time` (ns)
  int threads = 0;               // CPU threads the run used (OpenMP's count after --threads)
  // Once per shape, before the first forward and outside every per-forward time: the variant's
  // prepare() to a device synchronize (cuDNN's plan build and config timing, naive's mask).
  double setup_ns = 0;
  std::int64_t peak_extra_bytes = 0;  // peak device bytes of one forward beyond inputs and output
  double rel_err = 0;            // ‖out − ref‖ / ‖ref‖ against fp64, over the rows that see a key
  std::string err_scope;         // "all 1024 rows" or "64 sampled rows of 131072" (+ " + N fully masked rows")
  bool nan_output = false;       // the output holds NaN anywhere
  // Rows that see no key (causal bottom-right with Sq > Sk: B·H·(Sq − Sk)); left out of rel_err.
  std::int64_t masked_rows = 0;
  std::int64_t masked_rows_nan = 0;   // of them, written as all NaN (naive, inplace: PyTorch's naive module)
  std::int64_t masked_rows_zero = 0;  // of them, written as all zeros (math, fused, efficient, flash, cudnn)
  // NaN only in fully masked rows: the expected PyTorch behaviour of a softmax over an all −inf
  // row, not a failure (rel_err is then a number, over the defined rows).
  bool nan_only_in_masked_rows = false;
  double kernels_per_forward = 0;
  double memcpy_per_forward = 0;
  double memset_per_forward = 0;
  double flops = 0;
  double tflops = 0;
  std::string trace_path;        // written trace (.json.gz), empty when none
  std::string table_path;        // key_averages .txt
  std::optional<trace::Trace> trace;
  std::string timing_source;     // "profiler", "wall clock", "CUDA events (CUPTI unavailable: ...)"
  int determinism_runs = 0;      // forwards compared bit for bit with the first (0: not checked)
  int determinism_mismatches = 0;  // of those, how many differed
};

// Throws UsageError for a variant that refuses the spec, naming the reason.
RunResult run_variant(const RunOptions& options);

// The options of a later round of `options`' run: the same forwards, measured again on fresh
// inputs and output, writing no files and checking no determinism (the first round did both).
RunOptions later_round(const RunOptions& options);
// Adds a later round's samples to `into` (its times, their spread and its rate follow); the
// trace, correctness and memory stay the first round's.
void add_round(RunResult& into, const RunResult& round);

}  // namespace attnprof
