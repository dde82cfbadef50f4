// The CPU FlashAttention-2 backward (flash and efficient) against the fp64 gradient reference
// (variants/reference_backward.h): dQ, dK, dV within 1e-5 (fp32) / 1e-2 (bf16) relative, on every
// ISA this CPU has (portable and avx512; bf16 runs the fp32 tiles on both), over odd S, Sq ≠ Sk,
// causal top-left and bottom-right (fully masked rows included), GQA/MQA, both layouts and
// D ∈ {8, 40, 64, 72, 128, 200, 256}. Gradient buffers are NaN-poisoned first: every element must
// be written and none may be NaN. Thread splits: cases with many (b, kv head) groups run whole
// groups per thread, cases with one or two share each group's key blocks between the threads.
#include <attnprof/attention.h>
#include <attnprof/error.h>
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <omp.h>

#include <cstring>
#include <string>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/cpu_features.h"
#include "variants/reference.h"
#include "variants/reference_backward.h"

namespace attnprof::cpu {
namespace {

struct Case {
  DType dtype;
  Layout layout;
  bool causal;
  CausalAlign align;
  std::int64_t batch, heads, kv_heads, seq_q, seq_k, head_dim;
};

AttentionSpec spec_of(const Case& c) {
  return AttentionSpec{.batch = c.batch, .heads = c.heads, .kv_heads = c.kv_heads, .seq_q = c.seq_q, .seq_k = c.seq_k,
                       .head_dim = c.head_dim, .dtype = c.dtype, .causal = c.causal, .causal_align = c.align,
                       .layout = c.layout, .device = Device::cpu};
}

std::string case_name(const Case& c) {
  return fmt::format("{}_{}_{}_b{}h{}kv{}_sq{}_sk{}_d{}", dtype_name(c.dtype), layout_name(c.layout),
                     !c.causal ? "full" : c.align == CausalAlign::top_left ? "topleft" : "bottomright", c.batch,
                     c.heads, c.kv_heads, c.seq_q, c.seq_k, c.head_dim);
}

// One forward and its backward on the CPU backend, gradients NaN-poisoned first.
struct BackwardRun {
  AttentionInputs in;
  Tensor dout, out, lse, dq, dk, dv;
};

Tensor like_kv(const AttentionSpec& spec) {
  AttentionSpec kv = spec;
  kv.heads = spec.kv_heads;
  kv.seq_q = spec.seq_k;
  return make_output(kv);  // [B, Hkv, Sk, D] in the spec's layout
}

BackwardRun forward_then_backward(const AttentionSpec& spec, bool flash, std::uint64_t seed) {
  ops::Backend& backend = cpu_backend();
  BackwardRun r;
  r.in = make_inputs(spec, seed);
  r.dout = make_output(spec);
  fill_normal(r.dout, seed * 7 + 5);
  r.out = make_output(spec);
  r.lse = Tensor::empty({spec.batch, spec.heads, spec.seq_q}, DType::fp32, Device::cpu);
  if (flash) {
    backend.attention_flash(spec, r.out, r.in.q, r.in.k, r.in.v, &r.lse);
  } else {
    backend.attention_efficient(spec, r.out, r.in.q, r.in.k, r.in.v, &r.lse);
  }
  r.dq = make_output(spec);
  r.dk = like_kv(spec);
  r.dv = like_kv(spec);
  variants::poison_nan(r.dq);
  variants::poison_nan(r.dk);
  variants::poison_nan(r.dv);
  if (flash) {
    backend.attention_flash_backward(spec, r.dq, r.dk, r.dv, r.in.q, r.in.k, r.in.v, r.out, r.lse, r.dout);
  } else {
    backend.attention_efficient_backward(spec, r.dq, r.dk, r.dv, r.in.q, r.in.k, r.in.v, r.out, r.lse, r.dout);
  }
  return r;
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  const std::vector<std::int64_t> dims{8, 40, 64, 72, 128, 200, 256};
  std::size_t rotate = 0;
  for (DType dtype : {DType::fp32, DType::bf16}) {
    // every head dim, square odd S, alternating layout / causal / GQA
    for (std::int64_t d : dims) {
      const std::size_t r = rotate++;
      cases.push_back({dtype, r % 2 ? Layout::bshd : Layout::bhsd, r % 3 != 0, CausalAlign::top_left, 1, 4,
                       r % 2 ? 2 : 4, 77, 77, d});
    }
    // Sq ≠ Sk both ways, both alignments, one (b, kv head) group (threads share its key blocks)
    for (auto [sq, sk] : {std::pair<std::int64_t, std::int64_t>{77, 130}, {130, 77}, {1, 100}, {113, 17}}) {
      for (CausalAlign align : {CausalAlign::top_left, CausalAlign::bottom_right}) {
        cases.push_back({dtype, Layout::bhsd, true, align, 1, 3, 1, sq, sk, dims[rotate++ % dims.size()]});
      }
      cases.push_back({dtype, Layout::bshd, false, CausalAlign::top_left, 1, 2, 2, sq, sk, 64});
    }
    // many groups (whole groups per thread), odd S past one 64-row block, MQA
    cases.push_back({dtype, Layout::bshd, true, CausalAlign::top_left, 2, 4, 4, 129, 129, 64});
    cases.push_back({dtype, Layout::bhsd, true, CausalAlign::bottom_right, 3, 4, 1, 200, 67, 40});
    cases.push_back({dtype, Layout::bhsd, false, CausalAlign::top_left, 2, 8, 2, 1, 1, 128});
  }
  return cases;
}

class AttentionBackwardTest : public ::testing::TestWithParam<std::tuple<Isa, bool, Case>> {
 protected:
  void SetUp() override {
    if (static_cast<int>(detected_isa()) < static_cast<int>(std::get<0>(GetParam()))) GTEST_SKIP() << "CPU lacks this ISA";
    set_isa_limit(std::get<0>(GetParam()));
    threads_ = omp_get_max_threads();
    omp_set_num_threads(2);
  }
  void TearDown() override {
    set_isa_limit(Isa::avx512_amx);
    omp_set_num_threads(threads_);
  }
  int threads_ = 1;
};

TEST_P(AttentionBackwardTest, MatchesTheFp64Gradients) {
  const auto& [isa, flash, c] = GetParam();
  const AttentionSpec spec = spec_of(c);
  const BackwardRun r = forward_then_backward(spec, flash, 3);
  for (const Tensor* t : {&r.dq, &r.dk, &r.dv}) {
    EXPECT_EQ(variants::count_poison(*t), 0) << t->describe() << " has unwritten elements";
    EXPECT_EQ(variants::count_nan(*t), 0) << t->describe() << " has NaN";
  }
  const auto err = variants::check_gradients(spec, r.in.q, r.in.k, r.in.v, r.dout, r.dq, r.dk, r.dv);
  const double tol = c.dtype == DType::fp32 ? 1e-5 : 1e-2;
  EXPECT_LE(err.worst(), tol) << "dq " << err.dq << ", dk " << err.dk << ", dv " << err.dv;
}

INSTANTIATE_TEST_SUITE_P(Cpu, AttentionBackwardTest,
                         ::testing::Combine(::testing::Values(Isa::portable, Isa::avx512), ::testing::Values(true, false),
                                            ::testing::ValuesIn(all_cases())),
                         [](const auto& info) {
                           return fmt::format("{}_{}_{}", isa_name(std::get<0>(info.param)),
                                              std::get<1>(info.param) ? "flash" : "efficient",
                                              case_name(std::get<2>(info.param)));
                         });

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.storage_bytes() == b.storage_bytes() && std::memcmp(a.raw(), b.raw(), a.storage_bytes()) == 0;
}

// Ten runs with 2 threads give the same bits, both when threads take whole groups (8 groups) and
// when they share one group's key blocks (1 group).
TEST(AttentionBackward, DeterministicOverTenRunsWithTwoThreads) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(2);
  for (std::int64_t kv_heads : {4, 1}) {
    for (bool flash : {true, false}) {
      const AttentionSpec spec = spec_of({DType::fp32, Layout::bhsd, true, CausalAlign::top_left, 2 / kv_heads + 1, 4,
                                          kv_heads, 300, 300, 64});
      const BackwardRun first = forward_then_backward(spec, flash, 9);
      for (int run = 1; run < 10; ++run) {
        const BackwardRun again = forward_then_backward(spec, flash, 9);
        EXPECT_TRUE(same_bits(first.dq, again.dq)) << "dq differs on run " << run << ", kv_heads " << kv_heads;
        EXPECT_TRUE(same_bits(first.dk, again.dk)) << "dk differs on run " << run << ", kv_heads " << kv_heads;
        EXPECT_TRUE(same_bits(first.dv, again.dv)) << "dv differs on run " << run << ", kv_heads " << kv_heads;
      }
    }
  }
  omp_set_num_threads(saved);
}

// Bottom-right with Sq > Sk: the first Sq − Sk rows see no key; their dq is exactly 0 and they
// add nothing to dk/dv (the fp64 reference agrees on the rest).
TEST(AttentionBackward, FullyMaskedRowsGetZeroGradient) {
  const AttentionSpec spec = spec_of({DType::fp32, Layout::bhsd, true, CausalAlign::bottom_right, 1, 2, 1, 40, 10, 16});
  const BackwardRun r = forward_then_backward(spec, true, 4);
  for (std::int64_t h = 0; h < 2; ++h)
    for (std::int64_t i = 0; i < 30; ++i)
      for (std::int64_t d = 0; d < 16; ++d) EXPECT_EQ(r.dq.data<float>()[(h * 40 + i) * 16 + d], 0.0f) << h << " " << i;
  const auto err = variants::check_gradients(spec, r.in.q, r.in.k, r.in.v, r.dout, r.dq, r.dk, r.dv);
  EXPECT_LE(err.worst(), 1e-5);
}

TEST(AttentionBackward, RecordsOneKernelNamedForItsPath) {
  const AttentionSpec spec = spec_of({DType::bf16, Layout::bhsd, false, CausalAlign::top_left, 1, 2, 2, 8, 8, 16});
  std::vector<std::string> log;
  set_kernel_log(&log);
  set_isa_limit(Isa::portable);
  const BackwardRun r = forward_then_backward(spec, true, 1);
  set_isa_limit(Isa::avx512_amx);
  set_kernel_log(nullptr);
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[1], "cpu::flash_attention_backward_bf16_portable");
}

TEST(AttentionBackward, RefusesOperandsThatDoNotFitTheSpec) {
  const AttentionSpec spec = spec_of({DType::fp32, Layout::bhsd, false, CausalAlign::top_left, 1, 2, 1, 8, 8, 16});
  BackwardRun r = forward_then_backward(spec, true, 1);
  ops::Backend& backend = cpu_backend();
  Tensor wrong_dk = make_output(spec);  // [1, 2, 8, 16]: dk needs the kv heads, [1, 1, 8, 16]
  try {
    backend.attention_flash_backward(spec, r.dq, wrong_dk, r.dv, r.in.q, r.in.k, r.in.v, r.out, r.lse, r.dout);
    FAIL() << "a dk with the query heads was taken";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "cpu attention: dk is fp32[1, 2, 8, 16], the spec needs fp32[1, 1, 8, 16]");
  }
  Tensor lse64 = Tensor::empty({1, 2, 8}, DType::fp64, Device::cpu);
  EXPECT_THROW(
      backend.attention_flash_backward(spec, r.dq, r.dk, r.dv, r.in.q, r.in.k, r.in.v, r.out, lse64, r.dout), Error);
}

}  // namespace
}  // namespace attnprof::cpu
