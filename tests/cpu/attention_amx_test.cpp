// The AMX path of the CPU fused attention (src/cpu/attention_amx.cpp) against an fp64 reference,
// and the dispatch that picks it.
//
// Two tile backends run the same Policy, driver and micro-kernel code:
// - AmxHardware: the tile registers (skipped, with the reason, where the CPU or the OS offers no AMX);
// - AmxEmulated: every tile instruction in scalar code (amx_emulated.h), wherever AVX512_BF16 exists,
//   so the AMX packing, zero padding, 32 × 32 blocking and per-thread tile set-up are checked on
//   CPUs without AMX too.
// Cases: S ∈ {1, 17, 77, 128, 1000, 1023} × D ∈ {32, 64, 80, 128} × causal and not, with layout
// (bhsd | bshd), tile configuration (flash 64 × 256 prepacked | efficient 64 × 64 per tile) and GQA
// rotated; Sq ≠ Sk (77/128, 128/77, 1/1023, 1000/17); odd and wide D (33, 1, 256). Outputs are
// NaN-poisoned first. Each element must lie within the bf16 error bound 2⁻⁸·(|ref| + max|v|)
// (P and the output rounded to bf16), the whole output within ‖out − ref‖/‖ref‖ ≤ 1e-2, and
// lse within 1e-4·(1 + |ref|). The emulated backend runs S = 1000, 1023 at D = 64, 80 only.
#include <attnprof/attention.h>
#include <attnprof/dtype.h>
#include <attnprof/tensor.h>
#include <attnprof/error.h>
#include <attnprof/kernel_overrides.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <memory>
#include <new>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cpu/amx.h"
#include "cpu/amx_emulated.h"
#include "cpu/cpu_backend.h"
#include "cpu/cpu_features.h"
#include "cpu/fused_attention.h"

namespace attnprof::cpu {
namespace {

enum class Tiles { hardware, emulated };

struct Case {
  bool flash;  // flash's tiles (64 × 256, K/V prepacked) or efficient's (64 × 64, packed per tile)
  bool bshd;
  bool causal;
  std::int64_t batch, heads, kv_heads, seq_q, seq_k, head_dim;
};

std::string case_name(const Case& c) {
  return fmt::format("{}_{}_{}_b{}h{}kv{}_sq{}_sk{}_d{}", c.flash ? "flash" : "efficient", c.bshd ? "bshd" : "bhsd",
                     c.causal ? "causal" : "full", c.batch, c.heads, c.kv_heads, c.seq_q, c.seq_k, c.head_dim);
}

void PrintTo(const Case& c, std::ostream* os) { *os << case_name(c); }

const std::int64_t kHeadDims[] = {32, 64, 80, 128};

// every_large: the S = 1000, 1023 cases for every head dim (hardware) or for D = 64 and 80 only
// (emulated: scalar tiles, kept to a few seconds on the CI's 2 cores).
std::vector<Case> cases(bool every_large) {
  std::vector<Case> out;
  int rotate = 0;
  for (std::int64_t s : {1, 17, 77, 128, 1000, 1023}) {
    const bool large = s >= 1000;
    for (std::int64_t d : kHeadDims) {
      if (large && !every_large && d != 64 && d != 80) continue;
      for (bool causal : {false, true}) {
        // causal is bit 0 of r; bits 1-2 give every (causal, layout, tiles) combination in 8 cases
        const int r = rotate++;
        const bool bshd = (r >> 1) & 1, flash = (((r >> 2) ^ r) & 1) == 0;
        // small S: B·H = 8 ≥ 2·threads, so flash takes its head-major schedule (each thread packs
        // its own heads); large S: B·H = 2, flash packs K/V once up front and shares the q-blocks.
        if (large) {
          out.push_back({flash, bshd, causal, 1, 2, (r >> 3) & 1 ? 1 : 2, s, s, d});
        } else {
          out.push_back({flash, bshd, causal, 2, 4, (r >> 3) & 1 ? 2 : 4, s, s, d});
        }
      }
    }
  }
  int r = 0;
  for (bool causal : {false, true}) {
    out.push_back({r++ % 2 == 0, false, causal, 2, 2, 1, 77, 128, 64});
    out.push_back({r++ % 2 == 0, true, causal, 1, 4, 2, 128, 77, 80});
    out.push_back({r++ % 2 == 0, false, causal, 1, 2, 2, 1, 1023, 32});
    out.push_back({r++ % 2 == 0, true, causal, 1, 2, 1, 1000, 17, 128});
    // odd and wide head dims: the element-wise packing (D odd), Dk padding 33 -> 64, 16-column tails
    out.push_back({r++ % 2 == 0, false, causal, 1, 2, 2, 77, 77, 33});
    out.push_back({r++ % 2 == 0, true, causal, 1, 2, 1, 100, 130, 1});
    out.push_back({r++ % 2 == 0, false, causal, 1, 2, 2, 65, 300, 256});
  }
  return out;
}

// Element strides [b, h, s, d] of a [B, H, S, D] operand stored as bhsd or bshd.
std::vector<std::int64_t> strides_of(bool bshd, std::int64_t heads, std::int64_t seq, std::int64_t d) {
  if (bshd) return {seq * heads * d, d, heads * d, 1};
  return {heads * seq * d, seq * d, d, 1};
}

std::vector<std::uint16_t> random_bf16(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::uint16_t> x(static_cast<std::size_t>(n));
  for (auto& e : x) e = float_to_bf16(normal(gen)).bits;
  return x;
}

double as_double(std::uint16_t bits) { return bf16_to_float(bf16{bits}); }

struct Operands {
  std::vector<std::uint16_t> q, k, v;
  std::vector<std::int64_t> q_strides, kv_strides;
};

Operands make_operands(const Case& c) {
  Operands o;
  o.q = random_bf16(c.batch * c.heads * c.seq_q * c.head_dim, 11);
  o.k = random_bf16(c.batch * c.kv_heads * c.seq_k * c.head_dim, 12);
  o.v = random_bf16(c.batch * c.kv_heads * c.seq_k * c.head_dim, 13);
  o.q_strides = strides_of(c.bshd, c.heads, c.seq_q, c.head_dim);
  o.kv_strides = strides_of(c.bshd, c.kv_heads, c.seq_k, c.head_dim);
  return o;
}

std::int64_t offset(const std::vector<std::int64_t>& strides, std::int64_t b, std::int64_t h, std::int64_t s,
                    std::int64_t d) {
  return b * strides[0] + h * strides[1] + s * strides[2] + d * strides[3];
}

struct Expected {
  std::vector<double> out;  // logical [B][H][Sq][D]
  std::vector<double> lse;  // [B][H][Sq], natural log
  double v_max = 0;         // max |v|
};

// Direct fp64 attention: top-left causal (row i sees keys 0..i), head h reads kv head h / (H/Hkv).
Expected reference(const Case& c, const Operands& in) {
  Expected e;
  e.out.assign(static_cast<std::size_t>(c.batch * c.heads * c.seq_q * c.head_dim), 0.0);
  e.lse.assign(static_cast<std::size_t>(c.batch * c.heads * c.seq_q), -std::numeric_limits<double>::infinity());
  for (std::uint16_t x : in.v) e.v_max = std::max(e.v_max, std::abs(as_double(x)));
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  std::vector<double> s(static_cast<std::size_t>(c.seq_k));
  for (std::int64_t b = 0; b < c.batch; ++b) {
    for (std::int64_t h = 0; h < c.heads; ++h) {
      const std::int64_t hk = h / (c.heads / c.kv_heads);
      for (std::int64_t i = 0; i < c.seq_q; ++i) {
        const std::int64_t visible = c.causal ? std::min(c.seq_k, i + 1) : c.seq_k;
        double m = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j < visible; ++j) {
          double dot = 0;
          for (std::int64_t d = 0; d < c.head_dim; ++d) {
            dot += as_double(in.q[offset(in.q_strides, b, h, i, d)]) * as_double(in.k[offset(in.kv_strides, b, hk, j, d)]);
          }
          s[j] = dot * scale;
          m = std::max(m, s[j]);
        }
        double l = 0;
        for (std::int64_t j = 0; j < visible; ++j) l += (s[j] = std::exp(s[j] - m));
        double* row = &e.out[static_cast<std::size_t>(((b * c.heads + h) * c.seq_q + i) * c.head_dim)];
        for (std::int64_t j = 0; j < visible; ++j) {
          for (std::int64_t d = 0; d < c.head_dim; ++d) row[d] += s[j] / l * as_double(in.v[offset(in.kv_strides, b, hk, j, d)]);
        }
        if (visible > 0) e.lse[static_cast<std::size_t>((b * c.heads + h) * c.seq_q + i)] = m + std::log(l);
      }
    }
  }
  return e;
}

struct AlignedDeleter {
  void operator()(void* p) const { ::operator delete(p, std::align_val_t{64}); }
};
using AlignedBuffer = std::unique_ptr<void, AlignedDeleter>;
AlignedBuffer aligned_buffer(std::int64_t bytes) {
  return AlignedBuffer(bytes > 0 ? ::operator new(static_cast<std::size_t>(bytes), std::align_val_t{64}) : nullptr);
}

struct Result {
  std::vector<std::uint16_t> out;  // stored in the case's layout
  std::vector<float> lse;
};

Result run_amx(Tiles tiles, const Case& c, const Operands& in) {
  constexpr int kThreads = 2;
  Result r;
  r.out.assign(static_cast<std::size_t>(c.batch * c.heads * c.seq_q * c.head_dim), 0x7fc0);  // NaN poison
  r.lse.assign(static_cast<std::size_t>(c.batch * c.heads * c.seq_q), std::numeric_limits<float>::quiet_NaN());
  FusedProblem p;
  p.dtype = DType::bf16;
  p.batch = c.batch;
  p.heads = c.heads;
  p.kv_heads = c.kv_heads;
  p.seq_q = c.seq_q;
  p.seq_k = c.seq_k;
  p.head_dim = c.head_dim;
  p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)));
  p.causal = c.causal;
  p.q = in.q.data();
  p.k = in.k.data();
  p.v = in.v.data();
  p.out = r.out.data();
  for (int d = 0; d < 4; ++d) {
    p.q_strides[d] = in.q_strides[static_cast<std::size_t>(d)];
    p.k_strides[d] = p.v_strides[d] = in.kv_strides[static_cast<std::size_t>(d)];
    p.out_strides[d] = in.q_strides[static_cast<std::size_t>(d)];
  }
  p.lse = r.lse.data();
  const TileConfig config = c.flash ? TileConfig{64, 256, true} : TileConfig{64, 64, false};
  const FusedWorkspace ws = tiles == Tiles::hardware ? fused_workspace(p, config, Isa::avx512_amx, kThreads)
                                                     : emulated::amx_workspace(p, config, kThreads);
  AlignedBuffer prepack = aligned_buffer(ws.prepack_bytes);
  AlignedBuffer scratch = aligned_buffer(ws.per_thread_bytes * kThreads);
  if (tiles == Tiles::hardware) {
    fused_attention(p, config, Isa::avx512_amx, prepack.get(), scratch.get(), kThreads);
  } else {
    emulated::amx_fused_attention(p, config, prepack.get(), scratch.get(), kThreads);
  }
  return r;
}

void check_against_reference(Tiles tiles, const Case& c) {
  const Operands in = make_operands(c);
  const Expected want = reference(c, in);
  const Result got = run_amx(tiles, c, in);
  double err2 = 0, ref2 = 0, max_err = 0, worst_excess = -1;
  std::int64_t nan_count = 0, out_of_bound = 0;
  std::string first_bad;
  for (std::int64_t b = 0; b < c.batch; ++b) {
    for (std::int64_t h = 0; h < c.heads; ++h) {
      for (std::int64_t i = 0; i < c.seq_q; ++i) {
        for (std::int64_t d = 0; d < c.head_dim; ++d) {
          const double ref = want.out[static_cast<std::size_t>(((b * c.heads + h) * c.seq_q + i) * c.head_dim + d)];
          const double x = as_double(got.out[static_cast<std::size_t>(offset(in.q_strides, b, h, i, d))]);
          if (std::isnan(x)) {
            ++nan_count;
            continue;
          }
          const double err = std::abs(x - ref);
          const double bound = std::ldexp(1.05, -8) * (std::abs(ref) + want.v_max) + 1e-6;
          err2 += err * err;
          ref2 += ref * ref;
          max_err = std::max(max_err, err);
          if (err > bound && out_of_bound++ == 0) {
            first_bad = fmt::format("b{} h{} row {} col {}: got {} want {} (bound {:.3g})", b, h, i, d, x, ref, bound);
          }
          worst_excess = std::max(worst_excess, err / bound);
        }
        const double lse_ref = want.lse[static_cast<std::size_t>((b * c.heads + h) * c.seq_q + i)];
        const double lse = got.lse[static_cast<std::size_t>((b * c.heads + h) * c.seq_q + i)];
        EXPECT_NEAR(lse, lse_ref, 1e-4 * (1 + std::abs(lse_ref))) << "lse of b" << b << " h" << h << " row " << i;
        if (::testing::Test::HasFailure()) return;  // one lse line, not thousands
      }
    }
  }
  const double rel_err = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  ::testing::Test::RecordProperty("max_abs_err", fmt::format("{:.3g}", max_err));
  ::testing::Test::RecordProperty("rel_err", fmt::format("{:.3g}", rel_err));
  EXPECT_EQ(nan_count, 0) << "elements left NaN (never written, or NaN computed)";
  EXPECT_EQ(out_of_bound, 0) << out_of_bound << " elements past the bf16 bound; first: " << first_bad;
  EXPECT_LE(rel_err, 1e-2) << "max abs err " << max_err << ", worst err/bound " << worst_excess;
}

std::string skip_reason(Tiles tiles) {
  if (tiles == Tiles::hardware) {
    const amx::Support& amx = amx::support();
    if (!amx.usable) return "no AMX on this CPU or OS: " + amx.reason;
    if (detected_isa() < Isa::avx512_amx) return "AMX without AVX512_BF16 (the Policy's softmax needs it)";
    return "";
  }
  if (detected_isa() < Isa::avx512_bf16) return "the emulated AMX Policy needs AVX512_BF16 for its softmax";
  return "";
}

class AmxHardware : public ::testing::TestWithParam<Case> {};
class AmxEmulated : public ::testing::TestWithParam<Case> {};

TEST_P(AmxHardware, MatchesFp64Reference) {
  if (auto why = skip_reason(Tiles::hardware); !why.empty()) GTEST_SKIP() << why;
  check_against_reference(Tiles::hardware, GetParam());
}
TEST_P(AmxEmulated, MatchesFp64Reference) {
  if (auto why = skip_reason(Tiles::emulated); !why.empty()) GTEST_SKIP() << why;
  check_against_reference(Tiles::emulated, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Cpu, AmxHardware, ::testing::ValuesIn(cases(true)),
                         [](const ::testing::TestParamInfo<Case>& info) { return case_name(info.param); });
INSTANTIATE_TEST_SUITE_P(Cpu, AmxEmulated, ::testing::ValuesIn(cases(false)),
                         [](const ::testing::TestParamInfo<Case>& info) { return case_name(info.param); });

// /proc/cpuinfo's flags, an independent reading of CPUID.
bool cpuinfo_has(const std::string& flag) {
  std::ifstream file("/proc/cpuinfo");
  for (std::string line; std::getline(file, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string w; words >> w;) {
      if (w == flag) return true;
    }
    return false;
  }
  return false;
}

TEST(AmxDispatch, SupportAgreesWithCpuinfo) {
  const amx::Support& amx = amx::support();
  if (!std::ifstream("/proc/cpuinfo")) GTEST_SKIP() << "no /proc/cpuinfo";
  EXPECT_EQ(amx.cpu_has_amx, cpuinfo_has("amx_tile") && cpuinfo_has("amx_bf16"));
  if (!amx.cpu_has_amx) {
    EXPECT_EQ(amx.reason, "no AMX-TILE/AMX-BF16 on this CPU");
  }
  EXPECT_EQ(amx.usable, amx.reason.empty()) << amx.reason;
  EXPECT_TRUE(!amx.usable || amx.cpu_has_amx);
  if (detected_isa() >= Isa::avx512_bf16) {
    EXPECT_EQ(detected_isa() == Isa::avx512_amx, amx.usable);
  }
  RecordProperty("amx", amx.usable ? "usable" : amx.reason);
}

TEST(AmxDispatch, IsaLevelsAndTheOverrideCap) {
  EXPECT_STREQ(isa_name(Isa::avx512_amx), "avx512_amx");
  EXPECT_GT(Isa::avx512_amx, Isa::avx512_bf16);
  EXPECT_EQ(isa_limit_from(nullptr), Isa::avx512_amx);
  EXPECT_EQ(isa_limit_from("avx512_amx"), Isa::avx512_amx);
  EXPECT_EQ(isa_limit_from("avx512_bf16"), Isa::avx512_bf16);
  EXPECT_EQ(isa_limit_from("avx512"), Isa::avx512);
  EXPECT_EQ(isa_limit_from("portable"), Isa::portable);
  EXPECT_THROW(isa_limit_from("avx512bf16"), UsageError);  // misspelt: an error, not the best path
}

// KernelOverrides::cpu_isa (--cpu-isa) caps kernel_isa() as set_isa_limit does, and lifting it
// gives the detected ISA back; a misspelt cap is refused when set.
TEST(AmxDispatch, KernelOverridesCapTheIsa) {
  KernelOverrides overrides;
  overrides.cpu_isa = "portable";
  set_kernel_overrides(overrides);
  EXPECT_EQ(kernel_isa(), Isa::portable);
  overrides.cpu_isa = "avx512";
  set_kernel_overrides(overrides);
  EXPECT_EQ(kernel_isa(), std::min(Isa::avx512, detected_isa()));
  set_kernel_overrides(KernelOverrides{});
  EXPECT_EQ(kernel_isa(), detected_isa());
  overrides.cpu_isa = "avx512bf16";
  EXPECT_THROW(set_kernel_overrides(overrides), UsageError);
  EXPECT_EQ(kernel_isa(), detected_isa());  // the refused cap left the overrides as they were
}

TEST(AmxDispatch, OnlyBf16TakesTheAmxPath) {
  EXPECT_EQ(fused_isa(DType::bf16, Isa::avx512_amx), Isa::avx512_amx);
  EXPECT_EQ(fused_isa(DType::bf16, Isa::avx512_bf16), Isa::avx512_bf16);
  EXPECT_EQ(fused_isa(DType::fp32, Isa::avx512_amx), Isa::avx512);
  EXPECT_EQ(fused_isa(DType::fp16, Isa::avx512_amx), Isa::avx512);
  EXPECT_EQ(fused_isa(DType::bf16, Isa::portable), Isa::portable);
}

class AmxKernelName : public ::testing::Test {
 protected:
  void TearDown() override {
    set_isa_limit(Isa::avx512_amx);
    set_kernel_log(nullptr);
  }
  // The name of the flash kernel the CPU backend records for a small causal bf16 forward.
  static std::string flash_kernel_name() {
    AttentionSpec spec;
    spec.batch = 1;
    spec.heads = 2;
    spec.kv_heads = 2;
    spec.seq_q = spec.seq_k = 40;
    spec.head_dim = 64;
    spec.dtype = DType::bf16;
    spec.causal = true;
    spec.device = Device::cpu;
    Tensor q = Tensor::empty({1, 2, 40, 64}, DType::bf16), k = Tensor::empty({1, 2, 40, 64}, DType::bf16),
           v = Tensor::empty({1, 2, 40, 64}, DType::bf16), out = Tensor::empty({1, 2, 40, 64}, DType::bf16);
    fill_normal(q, 1);
    fill_normal(k, 2);
    fill_normal(v, 3);
    std::vector<std::string> log;
    set_kernel_log(&log);
    cpu_backend().attention_flash(spec, out, q, k, v, nullptr);
    set_kernel_log(nullptr);
    return log.size() == 1 ? log[0] : fmt::format("{} kernels", log.size());
  }
};

// set_isa_limit(avx512_bf16) (the same cap as --cpu-isa avx512_bf16) keeps the vdpbf16ps path, so
// both paths can be compared in one run.
TEST_F(AmxKernelName, SaysWhichPathRan) {
  if (detected_isa() < Isa::avx512_bf16) GTEST_SKIP() << "no AVX512_BF16 on this CPU";
  set_isa_limit(Isa::avx512_bf16);
  const std::string vdpbf16ps = flash_kernel_name();
  const amx::Support& amx = amx::support();
  if (amx.cpu_has_amx && !amx.usable) {
    EXPECT_EQ(vdpbf16ps, "cpu::flash_attention_bf16_avx512_bf16 [AMX off: " + amx.reason + "]");
  } else {
    EXPECT_EQ(vdpbf16ps, "cpu::flash_attention_bf16_avx512_bf16");
  }
  set_isa_limit(Isa::avx512_amx);
  const std::string best = flash_kernel_name();
  EXPECT_EQ(best, amx.usable ? "cpu::flash_attention_bf16_avx512_amx" : vdpbf16ps);
}

}  // namespace
}  // namespace attnprof::cpu
