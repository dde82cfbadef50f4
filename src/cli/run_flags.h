#pragma once
// Flags of `run` and `compare`: the shape, the variant(s), the schedule and the outputs.
#include <attnprof/compare.h>
#include <attnprof/run.h>

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include "cli/kernel_flags.h"
#include "cli/shape_flags.h"

namespace attnprof::cli {

struct RunFlags {
  ShapeFlags shape;
  KernelFlags kernels;
  std::string variant = "flash";
  std::string pass = "forward";  // --pass forward|backward|train
  std::optional<std::string> variants;  // compare: comma-separated; absent = every variant the device supports
  std::string format = "text";
  std::string out = "traces";
  std::string dump;
  std::string expect;  // run: the guessed work of one forward, e.g. gemm,mul,masked_fill,softmax,gemm
  bool no_profile = false;
  int wait = 1, warmup = 1, active = 10;  // every time printed is the median of the active steps
  int repeat = 10;
  double min_time = kDefaultMinTimeS;  // seconds the kept forwards fill at least (more forwards, up to 1000)
  // compare: the kept forwards measured in this many rounds (absent: compare_rounds(device))
  std::optional<int> rounds;
  bool compare = false;  // the flags are compare's (add_to without single_variant)
  std::vector<std::string> plugins;  // shared libraries of out-of-tree variants, loaded first

  void add_to(CLI::App& app, bool single_variant);
  // Validates everything (names, ranges, conflicts); throws UsageError naming the flag.
  RunOptions to_options() const;
  std::vector<std::string> variant_list() const;  // compare's --variants, checked against the registry
};

// --min-time on run, compare and sweep (default kDefaultMinTimeS), and its check: 0..60 seconds,
// else UsageError naming --min-time.
void add_min_time_option(CLI::App& app, double& min_time, const std::string& count_flags);  // "--forwards"
double checked_min_time(double seconds);

// --pass on run, compare and sweep: `pass` receives the text, parse_pass reads it.
void add_pass_flag(CLI::App& app, std::string& pass);

// A --variants list ("flash,math"): each name known to the registry. Throws UsageError naming
// --variants for an empty list, an empty item ("flash,") or an unknown name. compare and sweep
// both parse theirs here.
std::vector<std::string> parse_variant_list(const std::string& list);

}  // namespace attnprof::cli
