// The sm_90a flash kernel (src/cuda/hopper/flash_*.cuh) against fp64: odd sequence lengths,
// Sq != Sk, D 64 and 128, GQA and MQA, bhsd and bshd, causal (top-left, bottom-right and a negative
// causal_offset that leaves rows seeing no key) and not, bf16 and fp16, NaN-poisoned outputs (every
// element must be written), LSE, for both schedules (cta_per_tile, tile_counter); then 100 repeated
// launches that must agree bit for bit. Skips with the reason without a GPU or on a device that is
// not compute capability 9.0.
#include <attnprof/error.h>
#include <attnprof/kernel_overrides.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cuda/attention_reference.h"
#include "cuda/fused_attention.h"
#include "cuda/flash_gemm_probe.h"
#include "cuda/hopper/flash_hopper.h"

using namespace attnprof;
using namespace attnprof::cuda::gpu_testing;

#define ATTNPROF_REQUIRE_HOPPER()                                                                        \
  do {                                                                                                   \
    ATTNPROF_REQUIRE_GPU();                                                                              \
    if (auto attnprof_why_ = ::attnprof::cuda::hopper::hopper_unavailable_reason()) GTEST_SKIP() << *attnprof_why_; \
  } while (0)

namespace {

struct Problem {
  std::int64_t B, H, Hkv, Sq, Sk, D;
  bool causal;
  std::int64_t causal_offset;  // key j visible to query i iff j <= i + causal_offset (causal only)
  Layout layout;
  DType dtype;
  bool key_ramp = false;  // scale key j by 1 + 3·(Sk−1−j)/Sk: later-visited keys (low j) get larger logits
};

std::string describe(const Problem& p) {
  return "B" + std::to_string(p.B) + " H" + std::to_string(p.H) + "/" + std::to_string(p.Hkv) + " Sq" +
         std::to_string(p.Sq) + " Sk" + std::to_string(p.Sk) + " D" + std::to_string(p.D) +
         (p.causal ? " causal offset " + std::to_string(p.causal_offset) : std::string(" full")) + " " +
         std::string(p.layout == Layout::bhsd ? "bhsd" : "bshd") + " " + std::string(dtype_name(p.dtype)) +
         (p.key_ramp ? " key-ramp" : "");
}

struct Inputs {
  Tensor q_host, k_host, v_host;  // logical [B, H, S, D], contiguous
  Tensor q, k, v;                 // device, in the problem's layout
};

Inputs make_inputs(const Problem& p, std::uint64_t seed) {
  Inputs in;
  in.q_host = random_host({p.B, p.H, p.Sq, p.D}, p.dtype, seed);
  in.k_host = random_host({p.B, p.Hkv, p.Sk, p.D}, p.dtype, seed + 1);
  in.v_host = random_host({p.B, p.Hkv, p.Sk, p.D}, p.dtype, seed + 2);
  if (p.key_ramp)
    for (std::int64_t i = 0; i < in.k_host.numel(); ++i) {
      const std::int64_t key = (i / p.D) % p.Sk;
      set(in.k_host, i, get(in.k_host, i) * (1.0 + 3.0 * static_cast<double>(p.Sk - 1 - key) / static_cast<double>(p.Sk)));
    }
  in.q = in_layout(in.q_host, p.layout);
  in.k = in_layout(in.k_host, p.layout);
  in.v = in_layout(in.v_host, p.layout);
  return in;
}

cuda::FusedAttentionArgs args_of(const Problem& p, const Inputs& in, Tensor& out, Tensor* lse) {
  AttentionSpec spec;
  spec.batch = p.B;
  spec.heads = p.H;
  spec.kv_heads = p.Hkv;
  spec.seq_q = p.Sq;
  spec.seq_k = p.Sk;
  spec.head_dim = p.D;
  spec.causal = p.causal;
  spec.dtype = p.dtype;
  spec.layout = p.layout;
  spec.device = Device::cuda;
  cuda::FusedAttentionArgs a = cuda::fused_attention_args(spec, out, in.q, in.k, in.v, lse);  // the backend's
  a.causal_offset = p.causal ? p.causal_offset : 0;  // any offset, not only the two alignments
  return a;
}

Tensor run_kernel(const Problem& p, const Inputs& in, Tensor* lse,
                  cuda::hopper::FlashSchedule schedule = cuda::hopper::FlashSchedule::cta_per_tile) {
  Tensor out = empty_in_layout({p.B, p.H, p.Sq, p.D}, p.dtype, p.layout);
  poison(out);
  if (lse != nullptr) poison(*lse);
  cuda::hopper::launch_flash_attention_sm90(args_of(p, in, out, lse), cuda::backend_stream(), schedule);
  gpu().synchronize();
  return to_host(out);
}

// Host tensors holding the same bits (same element count and size).
bool same_bits(const Tensor& a, const Tensor& b) {
  return a.numel() == b.numel() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw(), b.raw(), static_cast<std::size_t>(a.numel()) * dtype_size(a.dtype())) == 0;
}

struct Check {
  double rel_error = 0, baseline_rel_error = 0, lse_max_abs_error = 0;
  std::int64_t non_finite = 0, lse_nan = 0;  // over the whole output / LSE (NaN poison left = unwritten)
  std::int64_t blind_rows = 0, blind_rows_wrong = 0;  // rows that see no key: must be all zeros, LSE -inf
};

// fp64 attention with the causal offset on the rows sample_rows picks (all of them when Sq <= 80);
// the baseline rounds P and O to the dtype as a fused kernel does.
Check check_against_fp64(const Problem& p, const Inputs& in, const Tensor& out, const Tensor& lse) {
  Check c;
  for (std::int64_t i = 0; i < out.numel(); ++i)
    if (!std::isfinite(get(out, i))) ++c.non_finite;
  for (std::int64_t i = 0; i < lse.numel(); ++i)
    if (std::isnan(get(lse, i)) || get(lse, i) == std::numeric_limits<double>::infinity()) ++c.lse_nan;
  const double scale = 1.0 / std::sqrt(static_cast<double>(p.D));
  const std::int64_t group = p.H / p.Hkv;
  double err2 = 0, base2 = 0, ref2 = 0;
  std::vector<double> s(static_cast<std::size_t>(p.Sk)), o(static_cast<std::size_t>(p.D)), ob(static_cast<std::size_t>(p.D));
  for (std::int64_t b = 0; b < p.B; ++b)
    for (std::int64_t h = 0; h < p.H; ++h)
      for (std::int64_t row : sample_rows(p.Sq)) {
        const std::int64_t kept =
            p.causal ? std::clamp<std::int64_t>(row + p.causal_offset + 1, 0, p.Sk) : p.Sk;
        const double got_lse = get(lse, (b * p.H + h) * p.Sq + row);
        if (kept == 0) {
          ++c.blind_rows;
          bool wrong = !(std::isinf(got_lse) && got_lse < 0);
          for (std::int64_t d = 0; d < p.D; ++d) wrong |= get(out, offset4(out, b, h, row, d)) != 0.0;
          c.blind_rows_wrong += wrong ? 1 : 0;
          continue;
        }
        double mx = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j < kept; ++j) {
          double dot = 0;
          for (std::int64_t d = 0; d < p.D; ++d)
            dot += get(in.q_host, offset4(in.q_host, b, h, row, d)) * get(in.k_host, offset4(in.k_host, b, h / group, j, d));
          s[static_cast<std::size_t>(j)] = dot * scale;
          mx = std::max(mx, dot * scale);
        }
        double sum = 0;
        for (std::int64_t j = 0; j < kept; ++j) sum += std::exp(s[static_cast<std::size_t>(j)] - mx);
        std::fill(o.begin(), o.end(), 0.0);
        std::fill(ob.begin(), ob.end(), 0.0);
        for (std::int64_t j = 0; j < kept; ++j) {
          const double e = std::exp(s[static_cast<std::size_t>(j)] - mx);
          const double prob = e / sum, prob_low = round_to(e, p.dtype) / sum;
          for (std::int64_t d = 0; d < p.D; ++d) {
            const double value = get(in.v_host, offset4(in.v_host, b, h / group, j, d));
            o[static_cast<std::size_t>(d)] += prob * value;
            ob[static_cast<std::size_t>(d)] += prob_low * value;
          }
        }
        for (std::int64_t d = 0; d < p.D; ++d) {
          const double want = o[static_cast<std::size_t>(d)];
          const double got = get(out, offset4(out, b, h, row, d));
          const double low = round_to(ob[static_cast<std::size_t>(d)], p.dtype);
          err2 += (got - want) * (got - want);
          base2 += (low - want) * (low - want);
          ref2 += want * want;
        }
        c.lse_max_abs_error = std::max(c.lse_max_abs_error, std::abs(got_lse - (mx + std::log(sum))));
      }
  c.rel_error = ref2 > 0 ? std::sqrt(err2 / ref2) : 0.0;
  c.baseline_rel_error = ref2 > 0 ? std::sqrt(base2 / ref2) : 0.0;
  return c;
}

std::vector<Problem> problems() {
  std::vector<Problem> all;
  for (std::int64_t s : {1, 17, 113, 1000, 1023, 4097})
    for (bool causal : {true, false}) all.push_back({1, 2, 2, s, s, 64, causal, 0, Layout::bhsd, DType::bf16});
  for (std::int64_t s : {113, 1023}) all.push_back({2, 2, 2, s, s, 128, true, 0, Layout::bhsd, DType::bf16});
  all.push_back({1, 2, 2, 113, 1000, 128, false, 0, Layout::bshd, DType::bf16});      // Sq < Sk
  all.push_back({1, 2, 2, 1000, 113, 64, true, 0, Layout::bhsd, DType::fp16});        // Sq > Sk, top-left
  all.push_back({1, 2, 2, 1000, 113, 128, true, 113 - 1000, Layout::bshd, DType::bf16});  // bottom-right: 887 blind rows
  all.push_back({1, 2, 2, 113, 1000, 64, true, 1000 - 113, Layout::bhsd, DType::bf16});   // bottom-right, Sq < Sk
  all.push_back({1, 3, 3, 300, 300, 128, true, -200, Layout::bhsd, DType::fp16});     // blind rows, whole blind CTAs
  all.push_back({1, 2, 2, 333, 777, 128, true, 0, Layout::bhsd, DType::bf16});
  all.push_back({2, 8, 2, 257, 257, 64, true, 0, Layout::bshd, DType::bf16});         // GQA 4:1, bshd
  all.push_back({1, 4, 1, 1000, 1000, 128, false, 0, Layout::bhsd, DType::fp16});     // MQA
  all.push_back({1, 2, 2, 777, 1500, 64, false, 0, Layout::bshd, DType::fp16});
  all.push_back({1, 2, 2, 600, 600, 128, true, 0, Layout::bhsd, DType::bf16, true});  // online rescale
  all.push_back({1, 2, 2, 600, 600, 64, false, 0, Layout::bshd, DType::fp16, true});
  all.push_back({1, 2, 2, 4097, 4097, 128, true, 0, Layout::bshd, DType::bf16});
  all.push_back({1, 2, 1, 129, 4097, 128, true, 4097 - 129, Layout::bhsd, DType::fp16});
  // Under compute-sanitizer (slow), ATTNPROF_QUICK keeps the shapes up to 1023.
  if (std::getenv("ATTNPROF_QUICK") != nullptr)
    all.erase(std::remove_if(all.begin(), all.end(), [](const Problem& p) { return std::max(p.Sq, p.Sk) > 1100; }),
              all.end());
  return all;
}

// More query tiles than an H200 has SMs (132), so a persistent CTA runs several: its K/V ring and Q
// barriers carry over from tile to tile, blind tiles included.
std::vector<Problem> many_tile_problems() {
  std::vector<Problem> all;
  all.push_back({4, 16, 16, 1000, 1000, 64, true, 0, Layout::bhsd, DType::bf16});          // 384 tiles
  all.push_back({2, 16, 8, 1000, 777, 128, true, -300, Layout::bshd, DType::fp16});        // 256 tiles, blind ones
  all.push_back({3, 8, 8, 700, 2000, 128, false, 0, Layout::bshd, DType::bf16});           // 144 tiles
  if (std::getenv("ATTNPROF_QUICK") != nullptr) all.resize(1);
  return all;
}

// o_without_lse: O is checked from a forward that asks for no LSE (tile_counter at D 64 runs another
// kernel when the LSE is asked for), the LSE from one that does.
void check_every_problem(cuda::hopper::FlashSchedule schedule, const char* name, std::int64_t only_head_dim = 0,
                         const std::vector<Problem>& list = problems(), bool o_without_lse = false) {
  std::uint64_t seed = 60;
  for (const Problem& p : list) {
    if (only_head_dim != 0 && p.D != only_head_dim) continue;
    const Inputs in = make_inputs(p, seed += 3);
    Tensor lse = Tensor::empty({p.B, p.H, p.Sq}, DType::fp32, Device::cuda);
    const Tensor with_lse = run_kernel(p, in, &lse, schedule);
    const Tensor out = o_without_lse ? run_kernel(p, in, nullptr, schedule) : with_lse;
    const Check c = check_against_fp64(p, in, out, to_host(lse));
    const std::string what = std::string(name) + " " + describe(p);
    EXPECT_EQ(c.non_finite, 0) << what;
    EXPECT_EQ(c.lse_nan, 0) << what << ": LSE entries left NaN (unwritten) or +inf";
    EXPECT_EQ(c.blind_rows_wrong, 0) << what << ": rows that see no key must be zeros with LSE -inf";
    // At most twice the error of an fp64 reference that rounds P and O to the dtype (plus a floor).
    EXPECT_LE(c.rel_error, 2.0 * c.baseline_rel_error + 2e-4) << what << " baseline " << c.baseline_rel_error;
    EXPECT_LE(c.rel_error, 1e-2) << what;
    EXPECT_LE(c.lse_max_abs_error, 1e-3) << what;
    std::printf("%s: rel err %.2e (low-precision baseline %.2e), lse max err %.1e, blind rows %lld\n", what.c_str(),
                c.rel_error, c.baseline_rel_error, c.lse_max_abs_error, static_cast<long long>(c.blind_rows));
  }
}

}  // namespace

// The kernel's two GEMMs alone (same TMA maps, shared-memory layout, descriptors and P fragments),
// on small integers so every sum is exact in fp32: if this passes and MatchesFp64 fails, the fault
// is in the pipeline, the softmax or the epilogue, not in the wgmma/TMA layouts.
TEST(FlashHopper, GemmProbeMatchesTheCpuExactly) {
  ATTNPROF_REQUIRE_HOPPER();
  for (std::int64_t d : {64, 128}) {
    std::mt19937 rng(static_cast<unsigned>(d));
    std::uniform_int_distribution<int> small(-3, 3);
    auto integers = [&](std::vector<std::int64_t> shape) {
      Tensor t = Tensor::empty(std::move(shape), DType::bf16, Device::cpu);
      for (std::int64_t i = 0; i < t.numel(); ++i) set(t, i, small(rng));
      return t;
    };
    const Tensor q = integers({128, d}), k = integers({128, d}), v = integers({128, d}), pm = integers({64, 128});
    const Tensor q_dev = to_device(q), k_dev = to_device(k), v_dev = to_device(v), p_dev = to_device(pm);
    Tensor s_dev = Tensor::empty({64, 128}, DType::fp32, Device::cuda), o_dev = Tensor::empty({64, d}, DType::fp32, Device::cuda);
    poison(s_dev);
    poison(o_dev);
    cuda::hopper::run_flash_gemm_probe(s_dev.data<float>(), o_dev.data<float>(), q_dev.raw(), k_dev.raw(), v_dev.raw(),
                                       static_cast<const std::uint16_t*>(p_dev.raw()), static_cast<int>(d),
                                       cuda::backend_stream());
    gpu().synchronize();
    const Tensor s = to_host(s_dev), o = to_host(o_dev);
    int s_wrong = 0, o_wrong = 0;
    for (std::int64_t r = 0; r < 64; ++r) {
      for (std::int64_t c = 0; c < 128; ++c) {
        double want = 0;
        for (std::int64_t x = 0; x < d; ++x) want += get(q, r * d + x) * get(k, c * d + x);
        if (get(s, r * 128 + c) != want && s_wrong++ < 5)
          ADD_FAILURE() << "D" << d << " S[" << r << "][" << c << "] = " << get(s, r * 128 + c) << ", want " << want;
      }
      for (std::int64_t c = 0; c < d; ++c) {
        double want = 0;
        for (std::int64_t j = 0; j < 128; ++j) want += get(pm, r * 128 + j) * get(v, j * d + c);
        if (get(o, r * d + c) != want && o_wrong++ < 5)
          ADD_FAILURE() << "D" << d << " O[" << r << "][" << c << "] = " << get(o, r * d + c) << ", want " << want;
      }
    }
    EXPECT_EQ(s_wrong, 0) << "D" << d << ": elements of Q·Kᵀ wrong (of 8192)";
    EXPECT_EQ(o_wrong, 0) << "D" << d << ": elements of P·V wrong (of " << 64 * d << ")";
  }
}

// FA3's schedule (GEMM/softmax overlap, pingpong) on one CTA per query tile.
TEST(FlashHopper, CtaPerTileMatchesFp64) {
  ATTNPROF_REQUIRE_HOPPER();
  check_every_problem(cuda::hopper::FlashSchedule::cta_per_tile, "flash sm90-cta-per-tile");
}

// The tile-counter schedule: one CTA per SM drawing tiles from a device counter in L2 sections, two
// Q buffers, O written by TMA stores a warp at a time, P's row sums from the tensor cores at D 64
// (P·V over V and a ones column, m64n72; a forward that asks for the LSE runs the fp32-row-sum
// kernel there). O from forwards without an LSE, the LSE from forwards with one, over the many-tile
// problems (every CTA draws several tiles, blind ones among them), the usual ones (fewer tiles than
// SMs: every CTA draws the end at once) and, in full runs, long-key problems whose order splits into
// several L2 sections, the last one short (4·Sk·D bytes a pair = 4 MiB → sections of 4 pairs: 6 = 4
// + 2 with GQA, 5 = 4 + 1), so a wrong section formula leaves tiles unwritten (NaN) or computes a
// row against another head's keys.
TEST(FlashHopper, TileCounterMatchesFp64) {
  ATTNPROF_REQUIRE_HOPPER();
  using cuda::hopper::FlashSchedule;
  check_every_problem(FlashSchedule::tile_counter, "flash sm90-tile-counter", 0, many_tile_problems(), true);
  check_every_problem(FlashSchedule::tile_counter, "flash sm90-tile-counter", 0, problems(), true);
  if (std::getenv("ATTNPROF_QUICK") != nullptr) return;  // under compute-sanitizer: keys up to 1100, as above
  check_every_problem(FlashSchedule::tile_counter, "flash sm90-tile-counter", 0,
                      {{1, 6, 3, 300, 8192, 128, true, 8192 - 300, Layout::bshd, DType::bf16},  // bottom-right, GQA 2:1
                       {1, 5, 5, 150, 16384, 64, false, 0, Layout::bhsd, DType::fp16}},
                      true);
}

// The counter goes back to zero after every launch (the last CTA resets it): launches in a row over
// different tile counts each compute every tile, bit for bit the first launch of the same problem
// (which matches fp64). A counter left at k would make the next launch skip tiles (NaN-poisoned
// rows) and hand CTAs tiles past the end.
TEST(FlashHopper, TileCounterStartsEveryLaunchAtZero) {
  ATTNPROF_REQUIRE_HOPPER();
  const std::vector<Problem> list = {Problem{4, 16, 16, 600, 600, 64, true, 0, Layout::bhsd, DType::bf16},    // 320 tiles
                                     Problem{1, 2, 2, 300, 300, 128, true, 0, Layout::bhsd, DType::bf16},     // 6 tiles
                                     Problem{2, 16, 8, 1000, 1000, 128, true, 0, Layout::bhsd, DType::bf16}};  // 256 tiles
  std::vector<Inputs> inputs;
  std::vector<Tensor> first;
  for (const Problem& p : list) {
    inputs.push_back(make_inputs(p, 170));
    first.push_back(run_kernel(p, inputs.back(), nullptr, cuda::hopper::FlashSchedule::tile_counter));
    std::int64_t non_finite = 0;  // NaN poison left: a tile skipped
    for (std::int64_t i = 0; i < first.back().numel(); ++i) non_finite += std::isfinite(get(first.back(), i)) ? 0 : 1;
    EXPECT_EQ(non_finite, 0) << describe(p);
  }
  for (int run = 0; run < 4; ++run)
    for (std::size_t i = 0; i < list.size(); ++i)
      EXPECT_TRUE(same_bits(first[i], run_kernel(list[i], inputs[i], nullptr, cuda::hopper::FlashSchedule::tile_counter)))
          << describe(list[i]) << " run " << run;
}

// The timeline build (the tile-counter kernel plus clock reads): one record per (query tile,
// consumer warpgroup), every record written and consistent with its lane's anchors
// (decode_flash_timeline checks), the key tiles each pass visited those of its query block, and the
// output bit for bit the forward's.
TEST(FlashHopper, TimelineRecordsEveryPassAndKeepsTheOutput) {
  ATTNPROF_REQUIRE_HOPPER();
  const Problem p{2, 16, 16, 600, 600, 64, true, 0, Layout::bhsd, DType::bf16};  // 5 query blocks of 128 rows
  const Inputs in = make_inputs(p, 150);
  const Tensor forward = run_kernel(p, in, nullptr, cuda::hopper::FlashSchedule::tile_counter);
  Tensor out = empty_in_layout({p.B, p.H, p.Sq, p.D}, p.dtype, p.layout);
  poison(out);
  const std::vector<cuda::hopper::FlashTileTiming> timings =
      cuda::hopper::run_flash_timeline_sm90(args_of(p, in, out, nullptr), cuda::backend_stream());
  const Tensor timed = to_host(out);
  EXPECT_TRUE(same_bits(forward, timed));
  ASSERT_EQ(timings.size(), static_cast<std::size_t>(p.B * p.H * 5 * 2));
  std::vector<int> key_tiles_seen(6, 0);
  for (const auto& t : timings) {
    ASSERT_GE(t.key_tiles, 1);
    ASSERT_LE(t.key_tiles, 5);
    ASSERT_LE(t.begin_ns, t.end_ns);
    ++key_tiles_seen[static_cast<std::size_t>(t.key_tiles)];
  }
  for (int n = 1; n <= 5; ++n) EXPECT_EQ(key_tiles_seen[static_cast<std::size_t>(n)], p.B * p.H * 2) << n;  // block n−1 sees n
  const auto summary = cuda::hopper::summarize_flash_timeline(timings);
  std::printf("tile-counter timeline, 2x16x600x64 causal:\n%s", cuda::hopper::flash_timeline_text(summary, 256.0).c_str());
  EXPECT_GT(summary.mainloop_cycles_per_key_tile, 0.0);
}

// Out-of-range tails are covered above; this checks that without LSE nothing is written there
// (a null LSE pointer) and the output is the same as with it.
TEST(FlashHopper, WithoutLseGivesTheSameOutput) {
  ATTNPROF_REQUIRE_HOPPER();
  const Problem p{1, 2, 2, 1000, 1000, 128, true, 0, Layout::bhsd, DType::bf16};
  const Inputs in = make_inputs(p, 90);
  Tensor lse = Tensor::empty({p.B, p.H, p.Sq}, DType::fp32, Device::cuda);
  const Tensor with = run_kernel(p, in, &lse), without = run_kernel(p, in, nullptr);
  ASSERT_EQ(with.numel(), without.numel());
  EXPECT_TRUE(same_bits(with, without));
}

// Repeated launches on NaN-poisoned outputs give identical bits: no race on the K/V ring, no
// missing write, no read of a stage before its TMA landed (which would show as run-to-run noise).
TEST(FlashHopper, HundredRunsAreBitwiseIdentical) {
  ATTNPROF_REQUIRE_HOPPER();
  for (const Problem& p : {Problem{2, 4, 2, 1000, 1000, 128, true, 0, Layout::bhsd, DType::bf16},
                           Problem{1, 4, 4, 1023, 777, 64, false, 0, Layout::bshd, DType::fp16},
                           Problem{4, 16, 16, 600, 600, 64, true, 0, Layout::bhsd, DType::bf16}}) {  // 256 tiles
    const Inputs in = make_inputs(p, 120);
    Tensor lse = Tensor::empty({p.B, p.H, p.Sq}, DType::fp32, Device::cuda);
    const Tensor first = run_kernel(p, in, &lse);
    const Tensor first_lse = to_host(lse);
    int differing_runs = 0;
    const int runs = std::getenv("ATTNPROF_QUICK") != nullptr ? 10 : 100;  // 10 under compute-sanitizer
    for (int run = 1; run < runs; ++run) {
      const Tensor again = run_kernel(p, in, &lse);
      const Tensor again_lse = to_host(lse);
      if (!same_bits(first, again) || !same_bits(first_lse, again_lse))
        ++differing_runs;
    }
    EXPECT_EQ(differing_runs, 0) << describe(p);
  }
}

// The same for tile_counter (the automatic choice at D 64 up to 2048 rows and D 128 up to 4096):
// 100 launches without an LSE (at D 64 the ones column's kernel), O identical bit for bit.
TEST(FlashHopper, TileCounterHundredRunsAreBitwiseIdentical) {
  ATTNPROF_REQUIRE_HOPPER();
  for (const Problem& p : {Problem{4, 16, 16, 600, 600, 64, true, 0, Layout::bhsd, DType::bf16},      // 320 tiles
                           Problem{2, 16, 8, 1000, 1000, 128, true, 0, Layout::bshd, DType::fp16}}) {  // 256 tiles
    const Inputs in = make_inputs(p, 121);
    const Tensor first = run_kernel(p, in, nullptr, cuda::hopper::FlashSchedule::tile_counter);  // no LSE: the ones column
    int differing_runs = 0;
    const int runs = std::getenv("ATTNPROF_QUICK") != nullptr ? 10 : 100;  // 10 under compute-sanitizer
    for (int run = 1; run < runs; ++run)
      if (!same_bits(first, run_kernel(p, in, nullptr, cuda::hopper::FlashSchedule::tile_counter))) ++differing_runs;
    EXPECT_EQ(differing_runs, 0) << describe(p);
  }
}

// The flash variant's path (launch_flash_attention) runs this kernel on sm_90 unless the
// overrides ask for sm80 (--flash-schedule sm80); either way it matches fp64.
TEST(FlashHopper, KernelChoiceFollowsTheOverrides) {
  auto choose = [](const char* schedule) {
    KernelOverrides overrides;
    overrides.flash_schedule = schedule;
    set_kernel_overrides(overrides);
    return cuda::hopper::flash_schedule_choice();
  };
  KernelOverrides bad;
  bad.flash_schedule = "sm70";
  try {
    set_kernel_overrides(bad);
    ADD_FAILURE() << "flash_schedule sm70 was accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("flash_schedule 'sm70':", 0), 0u) << e.what();
  }
  EXPECT_EQ(choose("sm80"), cuda::hopper::FlashSchedule::sm80);
  ATTNPROF_REQUIRE_HOPPER();
  EXPECT_EQ(choose(""), cuda::hopper::FlashSchedule::automatic);
  EXPECT_EQ(choose("sm90-cta-per-tile"), cuda::hopper::FlashSchedule::cta_per_tile);
  EXPECT_EQ(choose("sm90-tile-counter"), cuda::hopper::FlashSchedule::tile_counter);
  set_kernel_overrides(KernelOverrides{});

  const Problem p{1, 2, 2, 500, 500, 64, true, 0, Layout::bhsd, DType::bf16};
  const Inputs in = make_inputs(p, 150);
  AttentionSpec spec;
  spec.batch = p.B;
  spec.heads = p.H;
  spec.kv_heads = p.Hkv;
  spec.seq_q = p.Sq;
  spec.seq_k = p.Sk;
  spec.head_dim = p.D;
  spec.causal = p.causal;
  spec.dtype = p.dtype;
  spec.device = Device::cuda;
  Tensor lse = Tensor::empty({p.B, p.H, p.Sq}, DType::fp32, Device::cuda);
  const Tensor direct = run_kernel(p, in, &lse);
  for (const char* kernel : {"sm90-cta-per-tile", "sm80"}) {
    KernelOverrides overrides;
    overrides.flash_schedule = kernel;
    set_kernel_overrides(overrides);
    Tensor out = Tensor::empty({p.B, p.H, p.Sq, p.D}, p.dtype, Device::cuda);
    poison(out);
    gpu().attention_flash(spec, out, in.q, in.k, in.v, &lse);
    gpu().synchronize();
    const Tensor host = to_host(out);
    const Check c = check_against_fp64(p, in, host, to_host(lse));
    EXPECT_EQ(c.non_finite, 0) << kernel;
    EXPECT_LE(c.rel_error, 2.0 * c.baseline_rel_error + 2e-4) << kernel;
    if (std::string(kernel) == "sm90-cta-per-tile")  // the same kernel as the direct launch: the same bits
      EXPECT_TRUE(same_bits(host, direct));
  }
  set_kernel_overrides(KernelOverrides{});
}
