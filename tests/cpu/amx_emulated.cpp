// Scalar tile registers for the AMX Policy (see amx_emulated.h). Compiled with AVX-512 and
// AVX512_BF16 flags (the Policy's softmax and packing), no AMX flags; no globals with dynamic
// initialisation here, so nothing of this file runs before the test has checked the CPU.
#include "cpu/amx_emulated.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cpu/policy_amx.h"

namespace attnprof::cpu::emulated {
namespace {

[[noreturn]] void fault(const char* what) {
  std::fprintf(stderr, "emulated AMX fault: %s\n", what);
  std::abort();  // inside the driver's OpenMP region an exception could not reach the test
}

float bf16_bits_to_float(std::uint16_t bits) {
  const std::uint32_t wide = static_cast<std::uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

struct EmulatedTiles {
  struct Register {
    int rows = 0;
    int bytes_per_row = 0;
    alignas(64) std::uint8_t data[kTileRows][kTileBytesPerRow] = {};
  };
  struct State {
    bool configured = false;  // tile instructions before ldtilecfg (or after tilerelease) raise #UD
    Register tmm[kTileRegisters];
  };
  static State& state() {
    thread_local State s;  // tile state is per thread, as in hardware
    return s;
  }
  static Register& reg(int t) {
    State& s = state();
    if (!s.configured) fault("tile instruction on a thread without a loaded tile configuration");
    return s.tmm[t];
  }

  template <int T>
  static void load(const void* base, std::int64_t stride) {
    Register& r = reg(T);
    for (int i = 0; i < r.rows; ++i) std::memcpy(r.data[i], static_cast<const char*>(base) + i * stride, r.bytes_per_row);
  }
  template <int T>
  static void store(void* base, std::int64_t stride) {
    const Register& r = reg(T);
    for (int i = 0; i < r.rows; ++i) std::memcpy(static_cast<char*>(base) + i * stride, r.data[i], r.bytes_per_row);
  }
  template <int T>
  static void zero() {
    std::memset(reg(T).data, 0, sizeof(Register::data));
  }
  // tdpbf16ps: C[m][n] += Σ_p A[m][2p]·B[p][2n] + A[m][2p+1]·B[p][2n+1] (fp32 C, bf16 pairs).
  template <int C, int A, int B>
  static void dot() {
    Register& c = reg(C);
    const Register& a = reg(A);
    const Register& b = reg(B);
    if (c.rows != a.rows || a.bytes_per_row != 4 * b.rows || c.bytes_per_row != b.bytes_per_row) {
      fault("tdpbf16ps operand shapes do not match (#UD in hardware)");
    }
    const int cols = c.bytes_per_row / 4, pairs = a.bytes_per_row / 4;
    for (int m = 0; m < c.rows; ++m) {
      for (int n = 0; n < cols; ++n) {
        float acc;
        std::memcpy(&acc, c.data[m] + 4 * n, sizeof acc);
        for (int p = 0; p < pairs; ++p) {
          std::uint16_t a2[2], b2[2];
          std::memcpy(a2, a.data[m] + 4 * p, sizeof a2);
          std::memcpy(b2, b.data[p] + 4 * n, sizeof b2);
          acc += bf16_bits_to_float(a2[0]) * bf16_bits_to_float(b2[0]) +
                 bf16_bits_to_float(a2[1]) * bf16_bits_to_float(b2[1]);
        }
        std::memcpy(c.data[m] + 4 * n, &acc, sizeof acc);
      }
    }
  }
  static void configure(const TilePalette& palette) {
    if (palette.palette_id != 1 || palette.start_row != 0) fault("ldtilecfg: palette 1 from row 0 expected");
    State& s = state();
    for (int t = 0; t < kTileRegisters; ++t) {
      if (palette.rows[t] > kTileRows || palette.bytes_per_row[t] > kTileBytesPerRow) fault("ldtilecfg: tile too large");
      s.tmm[t] = Register{};
      s.tmm[t].rows = palette.rows[t];
      s.tmm[t].bytes_per_row = palette.bytes_per_row[t];
    }
    s.configured = true;
  }
  static void release() { state() = State{}; }
};

using PolicyEmulated = PolicyAmxBf16<EmulatedTiles>;

}  // namespace

FusedWorkspace amx_workspace(const FusedProblem& problem, const TileConfig& config, int threads) {
  return TileDriver<PolicyEmulated>(problem, config, threads).workspace();
}

void amx_fused_attention(const FusedProblem& problem, const TileConfig& config, void* prepack, void* scratch,
                         int threads) {
  if (!amx_tiles_fit(config)) fault("block sizes not multiples of 32");
  TileDriver<PolicyEmulated>(problem, config, threads).run(prepack, scratch, threads);
}

}  // namespace attnprof::cpu::emulated
