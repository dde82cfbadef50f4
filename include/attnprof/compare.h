#pragma once
// compare: run several variants on one shape; a variant that refuses the shape gives its reason.
#include <attnprof/run.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace attnprof {

// compare's rounds by default (--rounds), each in its own process after the first: 15 on the CPU,
// where one process's forwards can run 10-35% slower than the next process's throughout (a
// 2-core machine, bench/RESULTS.md: with 5 processes ten compares disagreed beyond their printed
// spreads, with 15 they agreed); 5 on a GPU, where each process rebuilds cuDNN's plans.
inline constexpr int kCompareRoundsCpu = 15;
inline constexpr int kCompareRoundsCuda = 5;
constexpr int compare_rounds(Device device) {
  return device == Device::cpu ? kCompareRoundsCpu : kCompareRoundsCuda;
}

// Measures round `round` (2..base.rounds) of `variants` (those that ran in the first round, in
// order) and returns each one's samples, in the same order.
using RoundMeasurer =
    std::function<std::vector<RoundSamples>(int round, const std::vector<std::string>& variants)>;

// `on_start(variant)` is called before each variant's first round (progress). Empty `variants`:
// every registered one. The kept forwards are measured in base.rounds rounds, each running every
// variant in turn on fresh inputs and output; the first round also checks, traces and writes.
// Rounds 2.. go through `later_rounds` (attnprof's CLI measures each in a fresh process, so the
// samples come from that many processes, which differ in allocations, page placement and speed);
// without one they run here, through measure_round. With one, the device's cached memory is
// released first, for those processes to allocate.
std::vector<CompareRow> compare_variants(const RunOptions& base, const std::vector<std::string>& variants,
                                         const std::function<void(const std::string&)>& on_start = {},
                                         const RoundMeasurer& later_rounds = {});

// One later round of `variants` in this process (later_round(base) for each, in order): what a
// process measuring a round for another runs.
std::vector<RoundSamples> measure_round(const RunOptions& base, const std::vector<std::string>& variants);

enum class CompareFormat { text, json };
// The glance table (text, `width` columns) or {"rows": [...], "ranking": {"fastest", "sentence"}}
// (json) of `attnprof compare`.
std::string render_compare(const std::vector<CompareRow>& rows, CompareFormat format, int width = 100);

// Loads a shared library of out-of-tree variants: it must export
//   extern "C" void attnprof_register_variants();
// which calls attnprof::register_variant. Throws UsageError naming plugin when it cannot.
void load_plugin(const std::string& path);

}  // namespace attnprof
