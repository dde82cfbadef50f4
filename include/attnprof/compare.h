#pragma once
// compare: run several variants on one shape; a variant that refuses the shape gives its reason.
#include <attnprof/run.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace attnprof {

// compare's rounds by default (--rounds): the kept forwards are measured over 5 passes.
inline constexpr int kCompareRounds = 5;

// `on_start(variant)` is called before each variant's first round (progress). Empty `variants`:
// every registered one. The kept forwards are measured in base.rounds rounds, each running every
// variant in turn on fresh inputs and output; the first round also checks, traces and writes.
std::vector<CompareRow> compare_variants(const RunOptions& base, const std::vector<std::string>& variants,
                                         const std::function<void(const std::string&)>& on_start = {});

enum class CompareFormat { text, json };
// The glance table (text, `width` columns) or {"rows": [...], "ranking": {"fastest", "sentence"}}
// (json) of `attnprof compare`.
std::string render_compare(const std::vector<CompareRow>& rows, CompareFormat format, int width = 100);

// Loads a shared library of out-of-tree variants: it must export
//   extern "C" void attnprof_register_variants();
// which calls attnprof::register_variant. Throws UsageError naming plugin when it cannot.
void load_plugin(const std::string& path);

}  // namespace attnprof
