#include "report/variant_color.h"

#include <cstdint>

namespace attnprof::report {
namespace {

struct NamedColor {
  std::string_view variant;
  const char* color;
};

constexpr NamedColor kBuiltinColors[] = {{"naive", "#d62728"}, {"inplace", "#ff7f0e"},   {"math", "#8c564b"},
                                         {"fused", "#9467bd"}, {"efficient", "#2ca02c"}, {"flash", "#1f77b4"},
                                         {"cudnn", "#17becf"}};

constexpr const char* kPluginColors[] = {"#e377c2", "#7f7f7f", "#bcbd22", "#393b79", "#637939",
                                         "#8c6d31", "#843c39", "#7b4173", "#5254a3", "#ad494a"};

std::uint64_t fnv1a64(std::string_view text) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

}  // namespace

const char* variant_color(std::string_view variant) {
  for (const NamedColor& named : kBuiltinColors) {
    if (named.variant == variant) return named.color;
  }
  return kPluginColors[fnv1a64(variant) % (sizeof kPluginColors / sizeof kPluginColors[0])];
}

}  // namespace attnprof::report
