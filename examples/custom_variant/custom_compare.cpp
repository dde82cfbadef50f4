// Registers the two-pass variant and compares it with naive and flash on the CPU: error vs fp64,
// trace, work per forward and insights, as `attnprof compare` prints them.
#include <attnprof/compare.h>
#include <attnprof/error.h>
#include <attnprof/variant.h>

#include <cstdio>

#include "two_pass_variant.h"

int main(int argc, char** argv) {
  attnprof::register_variant(make_two_pass_variant());
  attnprof::RunOptions options;
  options.spec.device = attnprof::Device::cpu;
  options.spec.batch = 1;
  options.spec.heads = options.spec.kv_heads = 4;
  options.spec.seq_q = options.spec.seq_k = 256;
  options.spec.head_dim = 64;
  options.out_dir = argc > 1 ? argv[1] : "traces";
  try {
    auto rows = attnprof::compare_variants(options, {"two_pass", "naive", "flash"});
    std::fputs(attnprof::render_compare(rows, attnprof::CompareFormat::text).c_str(), stdout);
  } catch (const attnprof::UsageError& e) {
    std::fprintf(stderr, "custom_compare: %s\n", e.what());
    return 2;
  }
  return 0;
}
