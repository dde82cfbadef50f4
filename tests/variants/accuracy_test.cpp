// Every CPU variant against the fp64 reference (issue 2, acceptance 3).
//
// Coverage, combined so the suite runs in about a minute on 2 cores:
// - S ∈ {1, 17, 77, 128}: the full product variant × dtype × layout × causal × GQA (Hkv = H and
//   Hkv = H/2), with D cycling through {32, 64, 80, 128} so every (variant, dtype, S) meets
//   several head dims;
// - S ∈ {1000, 1023}: every variant × dtype, with layout, causal, GQA and D rotated so each value
//   of each axis appears for every variant (B·H kept at 2 so the fp64 reference stays cheap);
// - Sq ≠ Sk: (77, 128), (128, 77), (1, 1023) and (1000, 17), every variant, causal and not.
// Every output is NaN-poisoned first; the test asserts no element kept the poison and no NaN
// appeared, and ‖out − ref‖/‖ref‖ ≤ 1e-5 (fp32) or 1e-2 (bf16, fp16) over all rows.
#include <attnprof/attention.h>
#include <attnprof/variant.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>
#include <vector>

#include "cpu/cpu_features.h"
#include "variants/cpu_case.h"
#include "variants/reference.h"

namespace attnprof {
namespace {

struct Case {
  std::string variant;
  DType dtype;
  Layout layout;
  bool causal;
  std::int64_t batch, heads, kv_heads, seq_q, seq_k, head_dim;
  CausalAlign align = CausalAlign::top_left;
};

std::string case_name(const Case& c) {
  return fmt::format("{}_{}_{}_{}_b{}h{}kv{}_sq{}_sk{}_d{}", c.variant, dtype_name(c.dtype), layout_name(c.layout),
                     c.causal ? "causal" : "full", c.batch, c.heads, c.kv_heads, c.seq_q, c.seq_k, c.head_dim);
}

const std::vector<std::string> kVariants{"naive", "inplace", "math", "fused", "efficient", "flash"};
const std::vector<DType> kDtypes{DType::bf16, DType::fp16, DType::fp32};
const std::vector<std::int64_t> kHeadDims{32, 64, 80, 128};

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  std::size_t rotate = 0;
  for (const auto& variant : kVariants) {
    for (DType dtype : kDtypes) {
      for (std::int64_t s : {1, 17, 77, 128}) {
        for (Layout layout : {Layout::bhsd, Layout::bshd}) {
          for (bool causal : {false, true}) {
            for (std::int64_t kv_heads : {4, 2}) {
              cases.push_back({variant, dtype, layout, causal, 1, 4, kv_heads, s, s, kHeadDims[rotate++ % 4]});
            }
          }
        }
      }
      for (std::int64_t s : {1000, 1023}) {
        const std::size_t r = rotate++;
        cases.push_back({variant, dtype, r % 2 ? Layout::bshd : Layout::bhsd, (r / 2) % 2 == 0, 1, 2,
                         (r % 3 == 0) ? 1 : 2, s, s, kHeadDims[r % 4]});
      }
    }
    for (bool causal : {false, true}) {
      const DType dtype = kDtypes[rotate % 3];
      cases.push_back({variant, dtype, Layout::bhsd, causal, 2, 2, 1, 77, 128, 64});
      cases.push_back({variant, dtype, Layout::bshd, causal, 1, 4, 2, 128, 77, 80});
      cases.push_back({variant, DType::fp32, Layout::bhsd, causal, 1, 2, 2, 1, 1023, 32});
      cases.push_back({variant, DType::bf16, Layout::bshd, causal, 1, 2, 1, 1000, 17, 128});
      ++rotate;
    }
  }
  return cases;
}

AttentionSpec spec_of(const Case& c) { return testing::cpu_spec(c); }
using testing::tolerance;

// Runs one case and checks it; returns the error for the caller's own assertions.
variants::ErrorReport run_case(const Case& c, std::uint64_t seed = 7) {
  const AttentionSpec spec = spec_of(c);
  spec.validate();
  Variant* variant = find_variant(c.variant);
  EXPECT_NE(variant, nullptr) << c.variant;
  if (variant == nullptr) return {};
  EXPECT_FALSE(variant->refusal(spec).has_value()) << variant->refusal(spec).value_or("");
  const AttentionInputs in = make_inputs(spec, seed);
  Tensor out = make_output(spec);
  variants::poison_nan(out);
  variant->prepare(spec);
  variant->forward(spec, in.q, in.k, in.v, out);
  const variants::ErrorReport report = variants::check_against_reference(spec, in.q, in.k, in.v, out, 1 << 20);
  EXPECT_EQ(report.unwritten, 0) << "elements never written";
  EXPECT_EQ(report.nan_count, 0);
  EXPECT_FALSE(report.sampled);
  EXPECT_LE(report.rel_err, tolerance(c.dtype)) << report.scope();
  ::testing::Test::RecordProperty("rel_err", fmt::format("{:.3g}", report.rel_err));
  return report;
}

class VariantAccuracy : public ::testing::TestWithParam<Case> {};

TEST_P(VariantAccuracy, MatchesFp64Reference) { run_case(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Cpu, VariantAccuracy, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return case_name(info.param); });

// The fused kernels' other builds: AVX-512 fp32 compute for bf16 (CPUs without AVX512_BF16), the
// portable loops, and on an AMX CPU the vdpbf16ps path it would otherwise skip. Odd sizes and GQA,
// causal and not.
class FusedKernelIsa : public ::testing::TestWithParam<cpu::Isa> {
 protected:
  void TearDown() override { cpu::set_isa_limit(cpu::Isa::avx512_amx); }
};

TEST_P(FusedKernelIsa, MatchesFp64Reference) {
  if (static_cast<int>(cpu::detected_isa()) < static_cast<int>(GetParam())) GTEST_SKIP() << "CPU lacks this ISA";
  cpu::set_isa_limit(GetParam());
  for (const char* variant : {"flash", "efficient"}) {
    for (DType dtype : kDtypes) {
      for (bool causal : {false, true}) {
        run_case({variant, dtype, Layout::bshd, causal, 1, 4, 2, 77, 77, 80});
        run_case({variant, dtype, Layout::bhsd, causal, 1, 2, 1, 300, 300, 64});
        run_case({variant, dtype, Layout::bhsd, causal, 1, 2, 2, 17, 200, 33});
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, FusedKernelIsa, ::testing::Values(cpu::Isa::portable, cpu::Isa::avx512, cpu::Isa::avx512_bf16,
                                                           cpu::Isa::avx512_amx),
                         [](const ::testing::TestParamInfo<cpu::Isa>& info) { return cpu::isa_name(info.param); });

}  // namespace
}  // namespace attnprof
