#include <attnprof/compare.h>
#include <attnprof/error.h>
#include <attnprof/variant.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include "run/preflight.h"
#include "run/run_pass.h"

namespace attnprof {

std::vector<CompareRow> compare_variants(const RunOptions& base, const std::vector<std::string>& variants,
                                         const std::function<void(const std::string&)>& on_start) {
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
      preflight_memory(base.spec, *variant, base.pass);  // before on_start: a refused variant is not "running"
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
  // variant's samples come from several allocations spread over the whole compare, and their
  // spread covers the drift a separate process would see.
  for (int round = 2; round <= base.rounds; ++round) {
    for (CompareRow& row : rows) {
      if (!row.result) continue;
      RunOptions options = later_round(base);
      options.variant = row.variant;
      add_round(*row.result, run_variant(options));
    }
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
