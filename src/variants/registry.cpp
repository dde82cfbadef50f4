#include <attnprof/variant.h>

#include <attnprof/error.h>
#include <fmt/format.h>

#include <mutex>

#include "core/did_you_mean.h"
#include "variants/builtin.h"

namespace attnprof {
namespace {
struct Registry {
  std::mutex mutex;
  std::vector<std::unique_ptr<Variant>> variants;
};
Registry& registry() {
  static Registry r;
  return r;
}
// Built-ins register on first use (static initialisers in a static library may be dropped by the linker).
void ensure_builtins() {
  static std::once_flag once;
  std::call_once(once, [] { register_builtin_variants(); });
}
}  // namespace

std::optional<std::string> Variant::backward_refusal(const AttentionSpec& spec) const {
  return fmt::format("device {}: the {} variant has no backward on this device", device_name(spec.device), name());
}

void Variant::backward(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                       const Tensor& dout, Tensor& dq, Tensor& dk, Tensor& dv) {
  (void)q, (void)k, (void)v, (void)out, (void)dout, (void)dq, (void)dk, (void)dv;
  throw Error(fmt::format("{}: backward() called on a spec it refuses: {}", name(),
                          backward_refusal(spec).value_or("no backward")));
}

void register_variant(std::unique_ptr<Variant> variant) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (auto& existing : r.variants) {
    if (existing->name() == variant->name()) {
      existing = std::move(variant);
      return;
    }
  }
  r.variants.push_back(std::move(variant));
}

Variant* find_variant(std::string_view name) {
  ensure_builtins();
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (auto& v : r.variants) {
    if (v->name() == name) return v.get();
  }
  return nullptr;
}

std::vector<Variant*> all_variants() {
  ensure_builtins();
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<Variant*> out;
  for (auto& v : r.variants) out.push_back(v.get());
  return out;
}

std::string variant_names() {
  std::string names;
  for (Variant* v : all_variants()) names += (names.empty() ? "" : "|") + std::string(v->name());
  return names;
}

std::string unknown_variant_message(std::string_view parameter, std::string_view name) {
  std::vector<std::string> names;
  for (Variant* v : all_variants()) names.emplace_back(v->name());
  return std::string(parameter) + ": unknown variant '" + std::string(name) + "'" + did_you_mean(name, names) +
         "; allowed: " + variant_names();
}

}  // namespace attnprof
