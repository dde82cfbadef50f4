// The GPU backwards of `efficient` and `flash`: the FlashAttention-2 kernels (src/cuda/attention_backward.*,
// efficient's, and flash's in the deterministic mode or off compute capability 9.0) and flash's
// sm_90a kernel (src/cuda/hopper/flash_bwd_*): dQ, dK, dV against the fp64 reference gradients,
// ‖x − ref‖/‖ref‖ ≤ 1e-2 for bf16 and fp16, every gradient element written (NaN-poisoned first, no
// NaN after), over odd S (1, 17, 127, 255), Sq ≠ Sk both ways, both causal alignments and
// non-causal (with the rows bottom-right leaves blind), GQA 8/2 and MQA, both layouts, D 32, 64, 96,
// 128, 192 and 256 (and 24, 40, 80, 160 zero-filled on the next kernel, 33 and 250 through the
// padded copy); every head dim 1..256 on one small GQA problem, and FlashAttention's grid of
// sequence pairs × head dims;
// bit-identical gradients over 10 runs without atomics (the sm_90a kernel: dK and dV bit-identical,
// dQ within a bf16 rounding); strided gradient views written in their own elements only; Δ (and
// the sm_90a kernel's dQ accumulator, and a padded head dim's copies) the only allocation; head
// dims past 256 refused in one line.
#include <attnprof/attention.h>
#include <attnprof/error.h>
#include <attnprof/kernel_overrides.h>
#include <attnprof/memory.h>
#include <attnprof/variant.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda/flash_attention_grid.h"
#include "cuda/gpu_test_util.h"
#include "cuda/gradient_check.h"
#include "cuda/hopper/flash_bwd.h"
#include "cuda/hopper/flash_hopper.h"
#include "ops/ops.h"
#include "variants/reference.h"
#include "variants/reference_backward.h"

using namespace attnprof;
using namespace attnprof::cuda::gpu_testing;

namespace {

const std::vector<BackwardCase> kCases{
    {8, 2, 1, 1, 64, true, CausalAlign::top_left, Layout::bhsd},
    {8, 2, 17, 17, 128, true, CausalAlign::bottom_right, Layout::bshd},
    {8, 2, 127, 255, 64, true, CausalAlign::bottom_right, Layout::bhsd},
    {8, 2, 255, 127, 128, true, CausalAlign::bottom_right, Layout::bshd},  // 128 blind rows per head
    {8, 2, 255, 127, 64, true, CausalAlign::top_left, Layout::bhsd},
    {8, 2, 127, 255, 128, true, CausalAlign::top_left, Layout::bshd},
    {4, 1, 127, 17, 64, false, CausalAlign::top_left, Layout::bshd},  // MQA
    {4, 1, 17, 255, 128, false, CausalAlign::top_left, Layout::bhsd},
    {4, 1, 255, 255, 64, true, CausalAlign::top_left, Layout::bshd},
    {4, 4, 255, 255, 128, false, CausalAlign::top_left, Layout::bhsd},
    {8, 2, 130, 70, 40, true, CausalAlign::bottom_right, Layout::bshd},  // the D 64 kernel, 3 chunks zero-filled
    {8, 2, 100, 150, 96, true, CausalAlign::top_left, Layout::bhsd},  // the D 96 kernels: 12-chunk rows
    {4, 1, 255, 127, 32, true, CausalAlign::bottom_right, Layout::bshd},  // the D 32 kernels, MQA
    {8, 2, 127, 17, 24, false, CausalAlign::top_left, Layout::bhsd},      // the D 32 kernels, 1 chunk zero-filled
    {8, 2, 70, 130, 80, true, CausalAlign::bottom_right, Layout::bshd},   // the D 96 kernels, 2 chunks zero-filled
    {4, 2, 255, 127, 256, true, CausalAlign::bottom_right, Layout::bshd},  // the D 256 kernels: two dK/dV halves
    {4, 1, 127, 255, 256, false, CausalAlign::top_left, Layout::bhsd},
    {8, 2, 130, 70, 192, true, CausalAlign::top_left, Layout::bhsd},  // the D 192 kernels: two 96-column halves
    {4, 2, 127, 255, 160, false, CausalAlign::top_left, Layout::bshd},  // the D 192 kernels, 4 chunks zero-filled
    {8, 2, 70, 130, 33, true, CausalAlign::bottom_right, Layout::bshd},  // padded to 40 (copies), the D 64 kernel
    {4, 2, 17, 255, 250, true, CausalAlign::bottom_right, Layout::bhsd},  // padded to 256
    // Many 128-key CTAs and 64-row query blocks each (the sm_90a kernel's ring wraps many times).
    {4, 4, 1000, 1000, 128, true, CausalAlign::bottom_right, Layout::bshd},
    {8, 1, 700, 1100, 64, false, CausalAlign::top_left, Layout::bhsd},
    // More tiles than the H200's 132 SMs, so the sm_90a kernel's persistent CTAs each take several:
    // 288 one-step tiles; 320 tiles of which the 192 past key 256 see no query (top-left, Sq < Sk).
    {16, 16, 17, 1100, 64, false, CausalAlign::top_left, Layout::bhsd},
    {32, 32, 130, 600, 128, true, CausalAlign::top_left, Layout::bshd},
};

std::string what_of(const std::string& name, const AttentionSpec& spec) {
  return name + (kernel_overrides().deterministic ? " (deterministic)" : "") + " " +
         std::string(dtype_name(spec.dtype)) + " " + spec.shape_string() + " " + std::string(layout_name(spec.layout)) +
         (spec.causal ? " causal" : " non-causal");
}

// KernelOverrides::deterministic for one scope.
struct DeterministicMode {
  DeterministicMode() {
    KernelOverrides o;
    o.deterministic = true;
    set_kernel_overrides(o);
  }
  ~DeterministicMode() { set_kernel_overrides(KernelOverrides{}); }
  DeterministicMode(const DeterministicMode&) = delete;
  DeterministicMode& operator=(const DeterministicMode&) = delete;
};

// One forward (keeping the LSE) and `runs` backwards through the variant, each into freshly
// poisoned gradient buffers; the host copies (same strides, byte for byte) of every run's gradients.
std::vector<AttentionGrads> run_backward(const std::string& name, const AttentionSpec& spec, const AttentionInputs& in,
                                         const Tensor& dout, int runs) {
  Variant* variant = find_variant(name);
  EXPECT_NE(variant, nullptr) << name;
  if (variant == nullptr) return {};
  if (auto why = variant->backward_refusal(spec)) {
    ADD_FAILURE() << what_of(name, spec) << ": refused: " << *why;
    return {};
  }
  Tensor out = make_output(spec);
  variant->prepare(spec);
  variant->forward_for_backward(spec, in.q, in.k, in.v, out);
  std::vector<AttentionGrads> host;
  AttentionGrads g = make_grads(spec);
  for (int run = 0; run < runs; ++run) {
    poison_pattern(g.dq);
    poison_pattern(g.dk);
    poison_pattern(g.dv);
    variant->backward(spec, in.q, in.k, in.v, out, dout, g.dq, g.dk, g.dv);
    gpu().synchronize();
    host.push_back(AttentionGrads{to_host_exact(g.dq), to_host_exact(g.dk), to_host_exact(g.dv)});
  }
  variant->release_saved();
  return host;
}

void check_against_fp64(const std::string& name, const AttentionSpec& spec, const AttentionInputs& in) {
  const Tensor dout = make_output_grad(spec, 23);
  const std::vector<AttentionGrads> got = run_backward(name, spec, in, dout, 1);
  if (got.empty()) return;
  const AttentionGrads& g = got.front();
  const std::string what = what_of(name, spec);
  for (const auto& [grad, label] : {std::pair{&g.dq, "dq"}, std::pair{&g.dk, "dk"}, std::pair{&g.dv, "dv"}}) {
    EXPECT_EQ(variants::count_poison(*grad), 0) << what << ": " << label << " elements never written";
    EXPECT_EQ(variants::count_nan(*grad), 0) << what << ": " << label << " holds NaN";
  }
  const Tensor q = to_host(in.q), k = to_host(in.k), v = to_host(in.v), dout_h = to_host(dout);
  const variants::GradientErrors err = variants::check_gradients(spec, q, k, v, dout_h, g.dq, g.dk, g.dv);
  constexpr double kTol = 1e-2;
  if (!(err.worst() <= kTol)) {  // name the element farthest from the reference in each gradient
    const variants::ReferenceGradients ref = variants::reference_gradients(spec, q, k, v, dout_h);
    EXPECT_LE(err.dq, kTol) << what << ": dq, worst element " << worst_element(g.dq, ref.dq);
    EXPECT_LE(err.dk, kTol) << what << ": dk, worst element " << worst_element(g.dk, ref.dk);
    EXPECT_LE(err.dv, kTol) << what << ": dv, worst element " << worst_element(g.dv, ref.dv);
  }
  std::printf("%-60s grad rel err dq %.2e dk %.2e dv %.2e\n", what.c_str(), err.dq, err.dk, err.dv);
}

void check_against_fp64(const std::string& name, const AttentionSpec& spec) {
  check_against_fp64(name, spec, make_inputs(spec, 23));
}

TEST(AttentionBackwardGpu, EfficientMatchesFp64Gradients) {
  ATTNPROF_REQUIRE_GPU();
  for (DType dtype : {DType::bf16, DType::fp16})
    for (const BackwardCase& c : kCases) check_against_fp64("efficient", backward_spec(c, dtype));
}

// On a compute capability 9.0 GPU the sm_90a kernel (asserted, so the tests below that tell the two
// apart test the kernel they mean), elsewhere the FlashAttention-2 kernels.
TEST(AttentionBackwardGpu, FlashMatchesFp64Gradients) {
  ATTNPROF_REQUIRE_GPU();
  const bool hopper = !cuda::hopper::hopper_unavailable_reason().has_value();
  EXPECT_EQ(cuda::hopper::flash_backward_runs_sm90(backward_spec(kCases[0], DType::bf16)), hopper);
  std::printf("flash's backward: %s\n", hopper ? "the sm_90a kernel" : "the FlashAttention-2 kernels");
  for (DType dtype : {DType::bf16, DType::fp16})
    for (const BackwardCase& c : kCases) check_against_fp64("flash", backward_spec(c, dtype));
}

// The three mma.sync kernels alone (scripts/gpu-check.sh runs this test under racecheck; with
// ATTNPROF_QUICK the cases up to 255 × 255, every kernel head dim and both paddings among them).
TEST(AttentionBackwardGpu, FlashDeterministicMatchesFp64Gradients) {
  ATTNPROF_REQUIRE_GPU();
  const DeterministicMode deterministic;
  EXPECT_FALSE(cuda::hopper::flash_backward_runs_sm90(backward_spec(kCases[0], DType::bf16)));
  const bool quick = std::getenv("ATTNPROF_QUICK") != nullptr;
  for (const BackwardCase& c : kCases)
    if (!quick || (c.seq_q <= 255 && c.seq_k <= 255)) check_against_fp64("flash", backward_spec(c, DType::bf16));
}

// Every score very negative (q = 1.6, k = −1.6 + a quarter of a random draw: scaled scores near
// −20, LSE near −16) with Sk = 100, not a multiple of the kernels' key blocks: a key row past Sk,
// zero-filled on load, would have P = exp(−LSE) ≈ 9e6 and a dS beyond fp16's range, and put
// inf · 0 = NaN into dQ unless it is masked. fp16, both fused variants, against fp64.
TEST(AttentionBackwardGpu, KeysPastSkStayOutOfDqAtVeryNegativeLse) {
  ATTNPROF_REQUIRE_GPU();
  for (const char* name : {"efficient", "flash"}) {
    const AttentionSpec spec =
        backward_spec(BackwardCase{4, 2, 64, 100, 64, false, CausalAlign::top_left, Layout::bhsd}, DType::fp16);
    AttentionInputs in = make_inputs(spec, 41);
    Tensor q = to_host(in.q), k = to_host(in.k);
    for (std::int64_t i = 0; i < q.numel(); ++i) set(q, i, 1.6);
    for (std::int64_t i = 0; i < k.numel(); ++i) set(k, i, -1.6 + 0.25 * get(k, i));
    in.q = to_device(q);
    in.k = to_device(k);
    check_against_fp64(name, spec, in);
  }
}

// The first element of `got` whose bytes differ from `first`'s (host tensors of one shape and
// dtype, any strides), as "[b, h, s, d] a vs b"; "" when none.
std::string first_difference(const Tensor& got, const Tensor& first) {
  const std::size_t size = dtype_size(got.dtype());
  for (std::int64_t a = 0; a < got.size(0); ++a)
    for (std::int64_t b = 0; b < got.size(1); ++b)
      for (std::int64_t c = 0; c < got.size(2); ++c)
        for (std::int64_t d = 0; d < got.size(3); ++d) {
          const std::int64_t at = offset4(got, a, b, c, d), at_first = offset4(first, a, b, c, d);
          if (std::memcmp(static_cast<const char*>(got.raw()) + at * size,
                          static_cast<const char*>(first.raw()) + at_first * size, size) != 0)
            return "[" + std::to_string(a) + ", " + std::to_string(b) + ", " + std::to_string(c) + ", " +
                   std::to_string(d) + "] " + std::to_string(get(got, at)) + " vs " +
                   std::to_string(get(first, at_first));
        }
  return "";
}

// The first element of `got` farther than `rel`·|want| + 1e-6 from `want`'s, as first_difference
// names it; "" when none.
std::string first_difference_beyond(const Tensor& got, const Tensor& want, double rel) {
  for (std::int64_t a = 0; a < got.size(0); ++a)
    for (std::int64_t b = 0; b < got.size(1); ++b)
      for (std::int64_t c = 0; c < got.size(2); ++c)
        for (std::int64_t d = 0; d < got.size(3); ++d) {
          const double x = get(got, offset4(got, a, b, c, d)), y = get(want, offset4(want, a, b, c, d));
          if (!(std::fabs(x - y) <= rel * std::fabs(y) + 1e-6))
            return "[" + std::to_string(a) + ", " + std::to_string(b) + ", " + std::to_string(c) + ", " +
                   std::to_string(d) + "] " + std::to_string(x) + " vs " + std::to_string(y);
        }
  return "";
}

// Without atomics (efficient, flash in the deterministic mode) ten backwards of one forward give
// the same bytes in every gradient. flash's sm_90a kernel: dK and dV too (one writer each, fixed
// order); dQ's fp32 sums arrive in any order, so its runs agree within one bf16 rounding (2^-7).
TEST(AttentionBackwardGpu, BitIdenticalOverTenRuns) {
  ATTNPROF_REQUIRE_GPU();
  for (int mode = 0; mode < 3; ++mode) {
    const char* name = mode == 0 ? "efficient" : "flash";
    std::optional<DeterministicMode> deterministic;
    if (mode == 2) deterministic.emplace();
    for (const BackwardCase& c : {BackwardCase{8, 2, 255, 383, 64, true, CausalAlign::bottom_right, Layout::bhsd},
                                  BackwardCase{8, 2, 383, 255, 128, false, CausalAlign::top_left, Layout::bshd}}) {
      const AttentionSpec spec = backward_spec(c, DType::bf16);
      const bool atomics = mode == 1 && cuda::hopper::flash_backward_runs_sm90(spec);
      const AttentionInputs in = make_inputs(spec, 5);
      const Tensor dout = make_output_grad(spec, 5);
      const std::vector<AttentionGrads> runs = run_backward(name, spec, in, dout, 10);
      for (std::size_t r = 1; r < runs.size(); ++r) {
        const std::string what = what_of(name, spec) + " run " + std::to_string(r) + " vs run 0: ";
        if (atomics)
          EXPECT_EQ(first_difference_beyond(runs[r].dq, runs[0].dq, 1.0 / 128), "") << what << "dq differs at";
        else
          EXPECT_EQ(first_difference(runs[r].dq, runs[0].dq), "") << what << "dq differs at";
        EXPECT_EQ(first_difference(runs[r].dk, runs[0].dk), "") << what << "dk differs at";
        EXPECT_EQ(first_difference(runs[r].dv, runs[0].dv), "") << what << "dv differs at";
      }
    }
  }
}

// Gradients as views with a row stride past the head dim (bshd rows of D + 16 elements): the
// kernels write exactly the view's elements — the same bytes as into dense buffers (flash's sm_90a
// dQ: within 2^-7 relative, its sums' order varies) — and leave the columns between rows poisoned.
TEST(AttentionBackwardGpu, StridedGradientViewsGetTheirElementsOnly) {
  ATTNPROF_REQUIRE_GPU();
  const AttentionSpec spec =
      backward_spec(BackwardCase{8, 2, 77, 133, 64, true, CausalAlign::bottom_right, Layout::bhsd}, DType::fp16);
  const AttentionInputs in = make_inputs(spec, 9);
  const Tensor dout = make_output_grad(spec, 9);
  Tensor out = make_output(spec);
  Tensor lse = Tensor::empty({spec.batch, spec.heads, spec.seq_q}, DType::fp32, Device::cuda);
  gpu().attention_flash(spec, out, in.q, in.k, in.v, &lse);
  for (bool flash : {false, true}) {
    auto backward = [&](Tensor& dq, Tensor& dk, Tensor& dv) {
      if (flash)
        gpu().attention_flash_backward(spec, dq, dk, dv, in.q, in.k, in.v, out, lse, dout);
      else
        gpu().attention_efficient_backward(spec, dq, dk, dv, in.q, in.k, in.v, out, lse, dout);
    };
    AttentionGrads dense = make_grads(spec);
    backward(dense.dq, dense.dk, dense.dv);
    const std::int64_t row = spec.head_dim + 16, d = spec.head_dim;
    auto padded = [&](std::int64_t heads, std::int64_t seq) {
      Tensor buffer = Tensor::empty({spec.batch, seq, heads, row}, spec.dtype, Device::cuda);
      poison_pattern(buffer);
      return buffer;
    };
    auto view = [&](const Tensor& buffer) {  // [B, H, S, D] of a [B, S, H, row] buffer
      return buffer.view_strided({buffer.size(0), buffer.size(2), buffer.size(1), d},
                                 {buffer.stride(0), row, buffer.stride(1), 1});
    };
    Tensor dq_buf = padded(spec.heads, spec.seq_q), dk_buf = padded(spec.kv_heads, spec.seq_k),
           dv_buf = padded(spec.kv_heads, spec.seq_k);
    Tensor dq = view(dq_buf), dk = view(dk_buf), dv = view(dv_buf);
    backward(dq, dk, dv);
    gpu().synchronize();
    const bool atomics = flash && cuda::hopper::flash_backward_runs_sm90(spec);
    const char* labels[] = {"dq", "dk", "dv"};
    const Tensor* dense_grads[] = {&dense.dq, &dense.dk, &dense.dv};
    const Tensor* buffers[] = {&dq_buf, &dk_buf, &dv_buf};
    for (int i = 0; i < 3; ++i) {
      const Tensor buffer = to_host_exact(*buffers[i]);
      const Tensor want = to_host(*dense_grads[i]);
      // The view's elements: the dense run's values; the 16 columns after each row: still poison.
      const Tensor got = buffer.view_strided({buffer.size(0), buffer.size(2), buffer.size(1), d},
                                             {buffer.stride(0), row, buffer.stride(1), 1});
      EXPECT_EQ(i == 0 && atomics ? first_difference_beyond(got, want, 1.0 / 128) : first_difference(got, want), "")
          << (flash ? "flash " : "efficient ") << labels[i] << " of " << spec.shape_string()
          << " into a strided view differs from the dense run at";
      const Tensor gaps = buffer.view_strided({buffer.size(0), buffer.size(2), buffer.size(1), 16},
                                              {buffer.stride(0), row, buffer.stride(1), 1}, d);
      std::int64_t gaps_poisoned = 0;
      for (std::int64_t a = 0; a < gaps.size(0); ++a)
        for (std::int64_t b = 0; b < gaps.size(1); ++b)
          for (std::int64_t c = 0; c < gaps.size(2); ++c)
            for (std::int64_t e = 0; e < 16; ++e) gaps_poisoned += std::isnan(get(gaps, offset4(gaps, a, b, c, e)));
      EXPECT_EQ(gaps_poisoned, gaps.numel())
          << (flash ? "flash " : "efficient ") << labels[i] << ": elements past the view's rows were written";
    }
  }
}

// The backward allocates Δ (fp32 per query row); for flash's sm_90a kernel its fp32 dQ accumulator
// and padded LSE and Δ (64 × kernel D + 2 × 64 fp32 per 64-row query block) and its tile counter
// (16 bytes); for a head dim that is not a multiple of 8 the padded copies of q, k, v, out, dout
// and the padded dq, dk, dv; and nothing else — what ops::fused_backward_workspace_bytes says — and
// frees it.
TEST(AttentionBackwardGpu, AllocatesExactlyTheWorkspaceItReports) {
  ATTNPROF_REQUIRE_GPU();
  // (head dim, the kernel's head dim, the padded head dim)
  // 250: padded to 256, on the mma.sync kernels for flash too (the sm_90a backward stops at 128).
  for (const auto [head_dim, kernel_dim, padded_dim] :
       {std::tuple{128, 128, 128}, std::tuple{33, 64, 40}, std::tuple{250, 256, 256}}) {
    const AttentionSpec spec = backward_spec(
        BackwardCase{8, 2, 300, 200, head_dim, true, CausalAlign::bottom_right, Layout::bshd}, DType::bf16);
    const AttentionInputs in = make_inputs(spec, 3);
    const Tensor dout = make_output_grad(spec, 3);
    Tensor out = make_output(spec);
    Tensor lse = Tensor::empty({spec.batch, spec.heads, spec.seq_q}, DType::fp32, Device::cuda);
    AttentionGrads g = make_grads(spec);
    for (bool flash : {true, false}) {
      const std::string what = std::string(flash ? "flash" : "efficient") + " head_dim " + std::to_string(head_dim);
      if (flash)
        gpu().attention_flash(spec, out, in.q, in.k, in.v, &lse);
      else
        gpu().attention_efficient(spec, out, in.q, in.k, in.v, &lse);
      gpu().synchronize();
      const std::int64_t before = memory::stats(Device::cuda).current_bytes;
      memory::reset_peak(Device::cuda);
      if (flash)
        gpu().attention_flash_backward(spec, g.dq, g.dk, g.dv, in.q, in.k, in.v, out, lse, dout);
      else
        gpu().attention_efficient_backward(spec, g.dq, g.dk, g.dv, in.q, in.k, in.v, out, lse, dout);
      gpu().synchronize();
      const std::int64_t extra = memory::stats(Device::cuda).peak_bytes - before;
      EXPECT_EQ(extra, ops::fused_backward_workspace_bytes(spec, flash)) << what;
      const bool accumulator = flash && cuda::hopper::flash_backward_runs_sm90(spec);
      const std::int64_t delta_bytes = spec.batch * spec.heads * spec.seq_q * 4;
      const std::int64_t accumulator_bytes =
          spec.batch * spec.heads * ((spec.seq_q + 63) / 64) * (64 * kernel_dim + 128) * 4 + 16;
      // q, out, dout, dq: 8·2·300 rows; k, v, dk, dv: 8·2·200 rows (kv_heads 2); bf16.
      const std::int64_t padded_bytes =
          head_dim == padded_dim ? 0 : (4 * 2 * 8 * 300 + 4 * 2 * 2 * 200) * padded_dim * 2;
      EXPECT_EQ(extra, delta_bytes + (accumulator ? accumulator_bytes : 0) + padded_bytes)
          << what << (accumulator ? ": Δ and the dQ accumulator" : ": Δ") << (padded_bytes ? " and the copies" : "");
      EXPECT_EQ(memory::stats(Device::cuda).current_bytes, before) << what;
    }
  }
}

// Head dims past 256 (and below 1) are refused in one line naming the value and what is allowed,
// by the variants and by the backend's backward itself.
TEST(AttentionBackwardGpu, RefusesHeadDimsOutside1To256) {
  ATTNPROF_REQUIRE_GPU();
  for (const char* name : {"efficient", "flash"}) {
    Variant* variant = find_variant(name);
    ASSERT_NE(variant, nullptr);
    for (std::int64_t head_dim : {257, 264}) {
      AttentionSpec spec = backward_spec(kCases[0], DType::bf16);
      spec.head_dim = head_dim;
      EXPECT_EQ(variant->backward_refusal(spec).value_or("(not refused)"),
                "head_dim " + std::to_string(head_dim) + ": the fused GPU kernels take 1..256")
          << name;
    }
  }
  const AttentionSpec spec = AttentionSpec{.batch = 1,
                                           .heads = 2,
                                           .kv_heads = 2,
                                           .seq_q = 8,
                                           .seq_k = 8,
                                           .head_dim = 264,
                                           .dtype = DType::bf16,
                                           .device = Device::cuda};
  const AttentionInputs in = make_inputs(spec, 1);
  Tensor out = make_output(spec), dout = make_output_grad(spec, 1);
  Tensor lse = Tensor::empty({1, 2, 8}, DType::fp32, Device::cuda);
  AttentionGrads g = make_grads(spec);
  for (bool flash : {true, false}) {
    try {
      if (flash)
        gpu().attention_flash_backward(spec, g.dq, g.dk, g.dv, in.q, in.k, in.v, out, lse, dout);
      else
        gpu().attention_efficient_backward(spec, g.dq, g.dk, g.dv, in.q, in.k, in.v, out, lse, dout);
      ADD_FAILURE() << "head_dim 264 ran";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()), "head_dim 264: the fused GPU kernels take 1..256");
    }
  }
}

// Every head dim from 1 to 256 on one small GQA problem (Sq 17, Sk 40, causal bottom-right), both
// variants: the multiples of 8 on the D 32, 64, 96, 128, 192 and 256 kernels (zero-filled past the
// head dim), the others through the padded copies; bf16 and fp16, bhsd and bshd alternating.
TEST(AttentionBackwardGpu, EveryHeadDimFrom1To256MatchesFp64) {
  ATTNPROF_REQUIRE_GPU();
  const int step = std::getenv("ATTNPROF_QUICK") != nullptr ? 13 : 1;
  for (std::int64_t d = 1; d <= 256; d += step) {
    const Layout layout = d % 2 == 0 ? Layout::bhsd : Layout::bshd;
    const DType dtype = d % 3 == 0 ? DType::fp16 : DType::bf16;
    const AttentionSpec spec =
        backward_spec(BackwardCase{4, 2, 17, 40, d, true, CausalAlign::bottom_right, layout}, dtype);
    const AttentionInputs in = make_inputs(spec, 29);
    for (const char* name : {"efficient", "flash"}) check_against_fp64(name, spec, in);
  }
}

// FlashAttention's own grid (flash_attention_grid.h: its (seq_q, seq_k) pairs × head dims 32..256),
// non-causal and causal bottom-right, both variants; MHA 2/2, GQA 4/2 and MQA 2/1 rotating over
// the (pair, head dim) cells, as do fp16 (a quarter) and bshd (a third). Under compute-sanitizer
// (ATTNPROF_QUICK): quick_grid_cell's four pairs and five head dims.
TEST(AttentionBackwardGpu, FlashAttentionsGridMatchesFp64) {
  ATTNPROF_REQUIRE_GPU();
  constexpr std::pair<std::int64_t, std::int64_t> kHeads[] = {{2, 2}, {4, 2}, {2, 1}};
  const bool quick = std::getenv("ATTNPROF_QUICK") != nullptr;
  int pair_index = 0;
  for (const auto& [sq, sk] : kFlashAttentionSeqPairs) {
    ++pair_index;
    int dim_index = 0;
    for (std::int64_t d : kGridHeadDims) {
      const int rotation = pair_index + dim_index++;
      if (quick && !quick_grid_cell(sq, sk, d)) continue;
      const auto [heads, kv_heads] = kHeads[rotation % 3];
      const DType dtype = rotation % 4 == 1 ? DType::fp16 : DType::bf16;
      const Layout layout = (rotation / 3) % 3 == 0 ? Layout::bshd : Layout::bhsd;
      for (bool causal : {false, true}) {
        const AttentionSpec spec = backward_spec(
            BackwardCase{heads, kv_heads, sq, sk, d, causal, CausalAlign::bottom_right, layout}, dtype);
        const AttentionInputs in = make_inputs(spec, 31);
        for (const char* name : {"efficient", "flash"}) check_against_fp64(name, spec, in);
      }
    }
  }
}

}  // namespace
