#pragma once
// What a run measured: the result types that src/run fills and src/report renders. The two
// layers share only these (docs/architecture.md); the CLI calls one, then the other.
#include <attnprof/attention.h>
#include <attnprof/time_stats.h>
#include <attnprof/trace.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attnprof {

struct RunResult {
  std::string variant;
  std::string summary;           // the variant's one line
  AttentionSpec spec;
  // What was measured (RunOptions::pass). "Per forward" below means per measured pass: one
  // forward, one backward (the attn_bwd range) or one training step (attn_fwd + attn_bwd).
  Pass pass = Pass::forward;
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
  // Backward and train passes: ‖x − ref‖/‖ref‖ of dq, dk and dv against the fp64 reference
  // gradients (NaN when the gradient holds a NaN), and the worst of the three.
  double grad_rel_err = 0;
  double grad_rel_err_dq = 0, grad_rel_err_dk = 0, grad_rel_err_dv = 0;
  // What they were compared on: "all rows", or "dq on 682 sampled rows of 262144, dk/dv on 511
  // sampled keys of 16384 in 1 of 16 kv-head groups" (a problem too large for the full reference)
  std::string grad_err_scope;
  double kernels_per_forward = 0;
  double memcpy_per_forward = 0;
  double memset_per_forward = 0;
  double flops = 0;
  double tflops = 0;
  std::string trace_path;        // written trace (.json.gz), empty when none
  std::string table_path;        // key_averages .txt
  std::optional<trace::Trace> trace;
  std::string timing_source;     // "profiler", "wall clock", "CUDA events (CUPTI unavailable: ...)"
  int determinism_runs = 0;      // passes compared bit for bit with the first (0: not checked)
  int determinism_mismatches = 0;  // of those, how many differed
  std::vector<std::string> determinism_differed;  // what differed: "out", and "dq", "dk", "dv" of a backward
};

// One row of `compare`: a variant's result, or why it did not run.
struct CompareRow {
  std::string variant;
  std::optional<RunResult> result;  // empty when refused
  std::string refusal;               // why it did not run
  std::string summary;               // the variant's one line, shown beside a refusal
};

}  // namespace attnprof
