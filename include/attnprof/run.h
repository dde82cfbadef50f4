#pragma once
// One profiled run of one variant: what `attnprof run` prints and `compare` tabulates.
#include <attnprof/attention.h>
#include <attnprof/kernel_overrides.h>
#include <attnprof/profiler.h>
#include <attnprof/result.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace attnprof {

inline constexpr double kDefaultMinTimeS = 0.2;  // --min-time
inline constexpr int kMaxKeptForwards = 1000;

struct RunOptions {
  AttentionSpec spec;
  std::string variant = "flash";
  // What is measured (--pass): one forward; the backward of a forward run outside the measured
  // region; or a training step, the forward then its backward. The per-forward times, work and
  // memory of RunResult are then per measured pass.
  Pass pass = Pass::forward;
  int threads = 0;               // 0: all cores
  std::uint64_t seed = 0;
  bool profile = true;           // false: time without recording (--no-profile)
  // wait 1, warmup 1 (the blog's), then 10 kept steps: every time is a median of at least 10 forwards
  profiler::Schedule schedule{1, 1, 10, 1};
  int timed_forwards = 10;       // --no-profile: forwards timed after one warm-up
  bool record_shapes = true;
  bool profile_memory = true;
  std::string out_dir = "traces";  // empty: write no files
  std::string dump_dir;            // --dump: q.npy, k.npy, v.npy, out.npy (+ do, dq, dk, dv.npy for a backward pass)
  int determinism_runs = -1;       // -1: 10 on a GPU, 0 on the CPU (its unit tests check it)
  // Backward and train: dq, dk, dv checked against the fp64 reference gradients before timing
  // (every element up to kFullGradientCheckMacs of work, a fixed sample above it:
  // variants::check_gradients); later rounds keep the first round's check.
  bool check_gradients = true;
  KernelOverrides kernels;         // installed for the process before the run (set_kernel_overrides)
  // The kept forwards (schedule.active, or timed_forwards) are measured over this many calls of
  // run_variant (compare's rounds, compare.cpp); one call measures ceil(kept / rounds) of them.
  int rounds = 1;
  // The kept forwards are the count above, or more when that many would take less than this many
  // seconds (estimated from passes timed before the kept ones: sizing_pass_ns), up to kMaxKeptForwards; 0
  // keeps the count exactly.
  double min_time_s = kDefaultMinTimeS;
};

// The kept forwards of a run whose one forward took `one_forward_ns`: `count`, raised to fill
// min_time_s at most to kMaxKeptForwards (never below count).
int kept_forwards(int count, double min_time_s, double one_forward_ns);

// The one-pass time kept_forwards is sized from: the median of passes timed by `time_pass` (ns
// each), at least 3 of them and more while they add up to under a twentieth of min_time_s (at
// most 100), stopping once the median times `count` fills min_time_s; one pass alone as long as
// min_time_s ends it at once. A median, so one pass slowed by the machine (a preemption) cannot
// shrink the kept count.
double sizing_pass_ns(int count, double min_time_s, const std::function<double()>& time_pass);

// Throws UsageError for a variant that refuses the spec, or has no backward for a backward or
// train pass, naming the reason and what is allowed.
RunResult run_variant(const RunOptions& options);

// The options of a later round of `options`' run: the same forwards, measured again on fresh
// inputs and output, writing no files and checking no determinism or gradients (the first round
// did those).
RunOptions later_round(const RunOptions& options);
// The samples one later round measured for one variant (ns), and whether another process measured
// them.
struct RoundSamples {
  std::vector<double> times, cpu_times;
  bool other_process = false;
};
// Adds a later round's samples to `into` (its times, their spread and its rate follow; the stats'
// processes count another process's round); the trace, correctness and memory stay the first round's.
void add_round(RunResult& into, const RoundSamples& round);

}  // namespace attnprof
