// Issue 8, item 7: the same seed gives bit-identical outputs run to run for every CPU variant,
// and the same bits with one thread as with all of them (work is split by (b, h, q-block), never
// inside a reduction, so scheduling order cannot change the sums).
#include <attnprof/attention.h>
#include <attnprof/variant.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <cstring>
#include <string>

namespace attnprof {
namespace {

struct Params {
  std::string variant;
  DType dtype;
};

Tensor run_once(Variant* variant, const AttentionSpec& spec, std::uint64_t seed) {
  const AttentionInputs in = make_inputs(spec, seed);
  Tensor out = make_output(spec);
  variant->prepare(spec);
  variant->forward(spec, in.q, in.k, in.v, out);
  return out;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.storage_bytes() == b.storage_bytes() && std::memcmp(a.raw(), b.raw(), a.storage_bytes()) == 0;
}

class Determinism : public ::testing::TestWithParam<Params> {};

TEST_P(Determinism, SameSeedSameBits) {
  AttentionSpec spec;
  spec.batch = 2;
  spec.heads = 4;
  spec.kv_heads = 2;
  spec.seq_q = spec.seq_k = 333;
  spec.head_dim = 64;
  spec.dtype = GetParam().dtype;
  spec.causal = true;
  spec.layout = Layout::bshd;
  Variant* variant = find_variant(GetParam().variant);
  ASSERT_NE(variant, nullptr);
  const Tensor first = run_once(variant, spec, 42);
  const Tensor second = run_once(variant, spec, 42);
  EXPECT_TRUE(same_bits(first, second)) << "two runs differ";

  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const Tensor single = run_once(variant, spec, 42);
  omp_set_num_threads(threads);
  EXPECT_TRUE(same_bits(first, single)) << "1 thread differs from " << threads;

  const Tensor other_seed = run_once(variant, spec, 43);
  EXPECT_FALSE(same_bits(first, other_seed)) << "the comparison must be able to fail";
}

std::vector<Params> all_params() {
  std::vector<Params> params;
  for (const char* v : {"naive", "inplace", "math", "fused", "efficient", "flash"}) {
    for (DType d : {DType::bf16, DType::fp16, DType::fp32}) params.push_back({v, d});
  }
  return params;
}

INSTANTIATE_TEST_SUITE_P(Cpu, Determinism, ::testing::ValuesIn(all_params()),
                         [](const ::testing::TestParamInfo<Params>& info) {
                           return info.param.variant + "_" + std::string(dtype_name(info.param.dtype));
                         });

}  // namespace
}  // namespace attnprof
