#include <attnprof/compare.h>
#include <attnprof/error.h>
#include <attnprof/variant.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include "ops/backend.h"
#include "run/preflight.h"
#include "run/scoped_kernel_overrides.h"
#include "run/run_pass.h"

namespace attnprof {

std::vector<RoundSamples> measure_round(const RunOptions& base, const std::vector<std::string>& variants) {
  std::vector<RoundSamples> samples;
  for (const std::string& name : variants) {
    RunOptions options = later_round(base);
    options.variant = name;
    RunResult round = run_variant(options);
    samples.push_back({std::move(round.time_samples), std::move(round.cpu_time_samples), false});
  }
  return samples;
}

std::vector<CompareRow> compare_variants(const RunOptions& base, const std::vector<std::string>& variants,
                                         const std::function<void(const std::string&)>& on_start,
                                         const RoundMeasurer& later_rounds) {
  std::vector<std::string> names = variants;
  if (names.empty()) {
    for (Variant* v : all_variants()) names.emplace_back(v->name());
  }
  std::vector<CompareRow> rows;
  for (const std::string& name : names) {
    CompareRow row{name, std::nullopt, {}, {}};
    Variant* variant = find_variant(name);
    if (variant == nullptr) {
      throw UsageError(unknown_variant_message("variants", name));
    }
    row.summary = std::string(variant->summary());
    std::optional<std::string> reason = variant->refusal(base.spec);
    if (!reason) reason = pass_refusal(*variant, base.spec, base.pass);
    if (reason) {
      row.refusal = *reason;
      rows.push_back(std::move(row));
      continue;
    }
    try {
      {  // sized with the run's overrides (flash's backward workspace depends on --deterministic)
        const ScopedKernelOverrides overrides(base.kernels);
        preflight_memory(base.spec, *variant, base.pass);  // before on_start: a refused variant is not "running"
      }
      RunOptions options = base;
      options.variant = name;
      if (on_start) on_start(name);
      row.result = run_variant(options);
    } catch (const UsageError& e) {  // the memory preflight or bad inputs: a reason, not a crash
      row.refusal = e.what();
    }
    rows.push_back(std::move(row));
  }
  // Rounds 2..N: every variant that ran, in the same order, on fresh inputs and output; so a
  // variant's samples come from several allocations (and processes) spread over the whole compare.
  std::vector<std::string> ran;
  for (const CompareRow& row : rows)
    if (row.result) ran.push_back(row.variant);
  if (ran.empty()) return rows;
  // A measurer in another process allocates on the same device: the pool this one keeps from round
  // 1 (the largest variant's peak) would be memory that process cannot have.
  if (later_rounds && base.rounds > 1 && ops::has_backend(base.spec.device))
    ops::backend(base.spec.device).release_cached_memory();
  for (int round = 2; round <= base.rounds; ++round) {
    std::vector<RoundSamples> samples = later_rounds ? later_rounds(round, ran) : measure_round(base, ran);
    if (samples.size() != ran.size()) {
      throw Error(fmt::format("compare: round {} measured {} variants, expected {}", round, samples.size(), ran.size()));
    }
    std::size_t next = 0;
    for (CompareRow& row : rows)
      if (row.result) add_round(*row.result, samples[next++]);
  }
  return rows;
}

void load_plugin(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    throw UsageError(fmt::format("plugin: cannot load '{}': {}", path, dlerror()));
  }
  using RegisterFn = void (*)();
  auto registrar = reinterpret_cast<RegisterFn>(dlsym(handle, "attnprof_register_variants"));
  if (registrar == nullptr) {
    throw UsageError(fmt::format(
        "plugin: '{}' does not export attnprof_register_variants (declare it extern \"C\")", path));
  }
  registrar();
}

}  // namespace attnprof
