#pragma once
// The tile driver of the CPU's FlashAttention-2 backward, shared by the portable and the AVX-512
// builds (each *.cpp that includes it instantiates it with its own Policy inside an anonymous
// namespace, so no code compiled for one ISA can be picked by the linker for another).
//
// First, per query row: Δ_i = Σ_d dO·O (fp32) and the LSE in score units, lse_i / scale, so that
// P = 2^((s − lse/scale)·scale·log2 e) = e^(scale·s − lse) runs on the forward's exp2 row kernel.
//
// Work item = one (b, kv head, key block of Bc keys); it owns dK and dV of those keys:
//   K block packed row-major [Bc][Dv] (the B of dQ) and transposed, Kᵀ and Vᵀ [Dv][Bc];
//   for each query head of the group, for each q-block of Br rows that sees a key of the block:
//     Q, dO packed [Br][Dv]
//     S  = Q·Kᵀ                 (micro-kernel, 6 rows × 64 keys)
//     dP = dO·Vᵀ
//     P  = e^(scale·S − lse), dS = P ⊙ (dP − Δ)   in place over S and dP, row by row;
//                                                   past the diagonal (and past Sk) P = dS = 0
//     dV += Pᵀ·dO, dK += dSᵀ·Q   (the micro-kernel reads P and dS column-major: no transpose)
//     dQ += dS·K                 (into the thread's fp32 dQ of the group, [group][Sq][Dv])
//   dK·scale and dV stored into dk/dv (the item's rows only: no atomics).
// dQ: with at least two groups per thread each thread takes whole groups (dynamic schedule; a
// group's sums run on one thread in a fixed order) and stores its dQ·scale; with fewer, all
// threads share each group's key blocks (a fixed snake assignment, so the causal blocks of
// decreasing cost pair up) and the dQ partials are summed in thread order. Either way the bits
// depend only on the inputs and the thread count.
//
// Causal: query row i sees keys 0..i + causal_offset. A key block is visited only by the q-blocks
// that reach it; in a tile crossing the diagonal the GEMMs skip 6-row/64-column micro-tiles wholly
// past it (S, dP), start the Pᵀ·dO and dSᵀ·Q reductions at the first row that sees the micro-tile's
// keys, and end the dS·K reduction at the micro-tile's last row's reach. Rows that see no key
// (bottom-right with Sq > Sk, or lse −inf) contribute nothing and get dQ = 0.
//
// FLOPs: 10·Sq·Sk·D per head (2.5× the forward: five GEMMs), halved for causal plus the diagonal
// tiles' waste. Bytes: q, dO read once per key block of their group (L2/L3), k, v once, the
// gradients written once; workspace O(threads · (Bc·D + Br·Bc + group·Sq·D)).
#include <attnprof/dtype.h>

#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "cpu/attention_backward.h"
#include "cpu/exp2_poly.h"
#include "cpu/row_kernels.h"

namespace attnprof::cpu {
namespace {

inline std::int64_t bwd_clamp(std::int64_t x, std::int64_t lo, std::int64_t hi) { return x < lo ? lo : (x > hi ? hi : x); }
inline std::int64_t bwd_min(std::int64_t a, std::int64_t b) { return a < b ? a : b; }

// An ISA's pieces: its row kernels (exp2, conversions) and its micro-kernel
// tile(trans_a, nr, nz, c, ldc, a, lda, b, ldb, k_count, row_scale).
using BackwardTileFn = void (*)(bool, int, int, float*, std::int64_t, const float*, std::int64_t, const float*,
                                std::int64_t, std::int64_t, const float*);
template <const RowKernels& kRows, BackwardTileFn kTile>
struct BackwardPolicy {
  static const RowKernels& rows() { return kRows; }
  static constexpr BackwardTileFn tile = kTile;
};

// Accumulate into C: the micro-kernels scale the loaded C rows by row_scale (at most 6 rows).
constexpr float kOnes[6] = {1, 1, 1, 1, 1, 1};

template <class Policy>
class BackwardDriver {
 public:
  BackwardDriver(const BackwardProblem& p, const BackwardTiles& t, int threads)
      : bp_(p), p_(p.forward), l_(detail::backward_layout(p, t, threads)) {}

  void run(void* shared, void* scratch, int threads) {
    float* shared_f = static_cast<float*>(shared);
    delta_ = shared_f + l_.off_delta;
    lse_ = shared_f + l_.off_lse;
    const std::int64_t groups = p_.batch * p_.kv_heads;
#pragma omp parallel num_threads(threads)
    {
      float* mine = static_cast<float*>(scratch) + l_.per_thread_floats * omp_get_thread_num();
      row_statistics(mine);
      if (l_.group_per_thread) {
#pragma omp for schedule(dynamic, 1)
        for (std::int64_t g = 0; g < groups; ++g) {
          float* dq = mine + l_.off_dq;
          std::memset(dq, 0, static_cast<std::size_t>(l_.group * p_.seq_q * l_.dv) * sizeof(float));
          for (std::int64_t kb = 0; kb < l_.k_blocks; ++kb) process(mine, g / p_.kv_heads, g % p_.kv_heads, kb);
          for (std::int64_t row = 0; row < l_.group * p_.seq_q; ++row) store_dq_row(g, row, dq, 1);
        }
      } else {
        const int team = omp_get_num_threads(), me = omp_get_thread_num();
        float* const scratch_f = static_cast<float*>(scratch);
        for (std::int64_t g = 0; g < groups; ++g) {
          std::memset(mine + l_.off_dq, 0, static_cast<std::size_t>(l_.group * p_.seq_q * l_.dv) * sizeof(float));
          // Snake: round r gives block r·T + t to thread t (even r) or thread T−1−t (odd r).
          for (std::int64_t kb = 0; kb < l_.k_blocks; ++kb) {
            const std::int64_t round = kb / team, lane = kb % team;
            if ((round % 2 == 0 ? lane : team - 1 - lane) == me) process(mine, g / p_.kv_heads, g % p_.kv_heads, kb);
          }
#pragma omp barrier
#pragma omp for schedule(static)
          for (std::int64_t row = 0; row < l_.group * p_.seq_q; ++row) {
            store_dq_row(g, row, scratch_f + l_.off_dq, team);
          }
        }
      }
    }
  }

 private:
  const RowKernels& rk() const { return Policy::rows(); }
  std::int64_t esize() const { return static_cast<std::int64_t>(dtype_size(p_.dtype)); }

  // Row (b, h, s) of a [b, h, s, d] tensor as D fp32 values, padded with zeros to ld.
  void load_row(float* dst, const void* base, const std::int64_t* strides, std::int64_t b, std::int64_t h,
                std::int64_t s, std::int64_t ld) const {
    const char* src = static_cast<const char*>(base) + (b * strides[0] + h * strides[1] + s * strides[2]) * esize();
    if (strides[3] == 1) {
      rk().load(dst, src, p_.dtype, p_.head_dim);
    } else {
      for (std::int64_t d = 0; d < p_.head_dim; ++d) rk().load(dst + d, src + d * strides[3] * esize(), p_.dtype, 1);
    }
    for (std::int64_t d = p_.head_dim; d < ld; ++d) dst[d] = 0.0f;
  }
  // D fp32 values into row (b, h, s) of a [b, h, s, d] tensor, rounded to the dtype.
  void store_row(void* base, const std::int64_t* strides, std::int64_t b, std::int64_t h, std::int64_t s,
                 const float* src) const {
    char* dst = static_cast<char*>(base) + (b * strides[0] + h * strides[1] + s * strides[2]) * esize();
    if (strides[3] == 1) {
      rk().store(dst, p_.dtype, src, p_.head_dim);
    } else {
      for (std::int64_t d = 0; d < p_.head_dim; ++d) rk().store(dst + d * strides[3] * esize(), p_.dtype, src + d, 1);
    }
  }

  // Δ_i = Σ_d dO·O and lse_i / scale for every query row (+inf where lse is −inf: such a row saw
  // no key, and (s − inf) gives P = 0 should it be asked for).
  void row_statistics(float* mine) {
    float* o = mine + l_.off_rows;
    float* d_o = o + l_.dv;
    const std::int64_t rows = p_.batch * p_.heads * p_.seq_q;
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t b = r / (p_.heads * p_.seq_q), h = (r / p_.seq_q) % p_.heads, i = r % p_.seq_q;
      load_row(o, p_.out, p_.out_strides, b, h, i, p_.head_dim);
      load_row(d_o, bp_.dout, bp_.dout_strides, b, h, i, p_.head_dim);
      float sum = 0.0f;
      for (std::int64_t d = 0; d < p_.head_dim; ++d) sum += o[d] * d_o[d];
      delta_[r] = sum;
      const float lse = p_.lse[r];
      lse_[r] = lse == -std::numeric_limits<float>::infinity() ? std::numeric_limits<float>::infinity() : lse / p_.scale;
    }
  }

  // dq[b, h, i] = scale · Σ_t partial_t[row] over the first n threads' dQ (thread t's at
  // dq0 + t·per_thread_floats), summed in thread order; row = (h − first head of the group)·Sq + i.
  void store_dq_row(std::int64_t g, std::int64_t row, float* dq0, int n) const {
    float* acc = dq0 + row * l_.dv;
    for (int t = 1; t < n; ++t) {
      const float* add = dq0 + t * l_.per_thread_floats + row * l_.dv;
      for (std::int64_t d = 0; d < p_.head_dim; ++d) acc[d] += add[d];
    }
    rk().scale(acc, p_.scale, p_.head_dim);
    const std::int64_t b = g / p_.kv_heads, h = (g % p_.kv_heads) * l_.group + row / p_.seq_q;
    store_row(bp_.dq, bp_.dq_strides, b, h, row % p_.seq_q, acc);
  }

  // The K/V block's three packs: K row-major [Bc][Dv], Kᵀ and Vᵀ [Dv][Bcp] (zero past the block).
  void pack_kv(float* mine, std::int64_t b, std::int64_t hk, std::int64_t j0, std::int64_t cols) const {
    float* k = mine + l_.off_k;
    float* kt = mine + l_.off_kt;
    float* vt = mine + l_.off_vt;
    float* v_row = mine + l_.off_rows;
    std::memset(kt, 0, static_cast<std::size_t>(l_.dv * l_.bcp) * sizeof(float));
    std::memset(vt, 0, static_cast<std::size_t>(l_.dv * l_.bcp) * sizeof(float));
    for (std::int64_t j = 0; j < cols; ++j) {
      float* krow = k + j * l_.dv;
      load_row(krow, p_.k, p_.k_strides, b, hk, j0 + j, l_.dv);
      load_row(v_row, p_.v, p_.v_strides, b, hk, j0 + j, l_.dv);
      for (std::int64_t d = 0; d < p_.head_dim; ++d) {
        kt[d * l_.bcp + j] = krow[d];
        vt[d * l_.bcp + j] = v_row[d];
      }
    }
  }

  void process(float* mine, std::int64_t b, std::int64_t hk, std::int64_t kb) const {
    const std::int64_t j0 = kb * l_.bc;
    const std::int64_t cols = bwd_min(l_.bc, p_.seq_k - j0);
    const std::int64_t offset = p_.causal ? p_.causal_offset : 0;
    // the first query row that sees key j0
    const std::int64_t first_row = p_.causal ? bwd_clamp(j0 - offset, 0, p_.seq_q) : 0;
    if (first_row >= p_.seq_q) {
      // no query row sees these keys: their gradients are zero
      write_kv_gradients(mine, b, hk, j0, cols, true);
      return;
    }
    pack_kv(mine, b, hk, j0, cols);
    std::memset(mine + l_.off_dk, 0, static_cast<std::size_t>(l_.bc * l_.dv) * sizeof(float));
    std::memset(mine + l_.off_dv, 0, static_cast<std::size_t>(l_.bc * l_.dv) * sizeof(float));
    for (std::int64_t hl = 0; hl < l_.group; ++hl) {
      for (std::int64_t qb = first_row / l_.br; qb < l_.q_blocks; ++qb) {
        tile(mine, b, hk, hl, qb, j0, cols);
      }
    }
    write_kv_gradients(mine, b, hk, j0, cols, false);
  }

  void write_kv_gradients(float* mine, std::int64_t b, std::int64_t hk, std::int64_t j0, std::int64_t cols,
                          bool zero) const {
    float* dk = mine + l_.off_dk;
    float* dv = mine + l_.off_dv;
    if (zero) {
      std::memset(dk, 0, static_cast<std::size_t>(cols * l_.dv) * sizeof(float));
      std::memset(dv, 0, static_cast<std::size_t>(cols * l_.dv) * sizeof(float));
    }
    for (std::int64_t j = 0; j < cols; ++j) {
      rk().scale(dk + j * l_.dv, p_.scale, p_.head_dim);
      store_row(bp_.dk, bp_.dk_strides, b, hk, j0 + j, dk + j * l_.dv);
      store_row(bp_.dv, bp_.dv_strides, b, hk, j0 + j, dv + j * l_.dv);
    }
  }

  // One (query head, q-block) × key block tile: the five GEMMs and the softmax backward between.
  void tile(float* mine, std::int64_t b, std::int64_t hk, std::int64_t hl, std::int64_t qb, std::int64_t j0,
            std::int64_t cols) const {
    const std::int64_t h = hk * l_.group + hl;
    const std::int64_t q0 = qb * l_.br;
    const std::int64_t rows = bwd_min(l_.br, p_.seq_q - q0);
    const std::int64_t offset = p_.causal ? p_.causal_offset : 0;
    const std::int64_t dv = l_.dv, bcp = l_.bcp;
    const std::int64_t cols_p = (cols + 15) / 16 * 16;
    float* q = mine + l_.off_q;
    float* d_o = mine + l_.off_do;
    float* s = mine + l_.off_s;
    float* dp = mine + l_.off_dp;
    const float* k = mine + l_.off_k;
    const float* kt = mine + l_.off_kt;
    const float* vt = mine + l_.off_vt;
    const std::int64_t stat0 = (b * p_.heads + h) * p_.seq_q + q0;
    // keys of this block row r sees (0 for a row whose lse is −inf)
    auto visible = [&](std::int64_t r) {
      if (lse_[stat0 + r] == std::numeric_limits<float>::infinity()) return std::int64_t{0};
      return p_.causal ? bwd_clamp(q0 + r + offset - j0 + 1, 0, cols) : cols;
    };
    // the causal reach only: the micro-tile bounds below must not depend on a row's lse
    auto reach = [&](std::int64_t r) { return p_.causal ? bwd_clamp(q0 + r + offset - j0 + 1, 0, cols) : cols; };

    for (std::int64_t r = 0; r < rows; ++r) {
      load_row(q + r * dv, p_.q, p_.q_strides, b, h, q0 + r, dv);
      load_row(d_o + r * dv, bp_.dout, bp_.dout_strides, b, h, q0 + r, dv);
    }
    // S = Q·Kᵀ, dP = dO·Vᵀ (64-key chunks wholly past the diagonal skipped)
    for (std::int64_t c0 = 0; c0 < cols_p; c0 += 64) {
      const int nz = static_cast<int>(bwd_min(64, cols_p - c0) / 16);
      for (std::int64_t r0 = 0; r0 < rows; r0 += 6) {
        const int nr = static_cast<int>(bwd_min(6, rows - r0));
        if (reach(r0 + nr - 1) <= c0) continue;
        Policy::tile(false, nr, nz, s + r0 * bcp + c0, bcp, q + r0 * dv, dv, kt + c0, bcp, dv, nullptr);
        Policy::tile(false, nr, nz, dp + r0 * bcp + c0, bcp, d_o + r0 * dv, dv, vt + c0, bcp, dv, nullptr);
      }
    }
    // P = e^(scale·S − lse) over S, dS = P ⊙ (dP − Δ) over dP; zero past each row's visible keys
    const float c = p_.scale * exp2_poly::kLog2e;
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t n = visible(r);
      float* prow = s + r * bcp;
      float* dsrow = dp + r * bcp;
      if (n > 0) rk().exp2_sum(prow, prow, c, lse_[stat0 + r], n);
      const float delta = delta_[stat0 + r];
      for (std::int64_t j = 0; j < n; ++j) dsrow[j] = prow[j] * (dsrow[j] - delta);
      for (std::int64_t j = n; j < cols_p; ++j) prow[j] = dsrow[j] = 0.0f;
    }
    // dV += Pᵀ·dO, dK += dSᵀ·Q: output rows are keys; rows before the first that sees a
    // micro-tile's first key hold zeros there and are left out of the reduction
    float* dk = mine + l_.off_dk;
    float* dvacc = mine + l_.off_dv;
    for (std::int64_t c0 = 0; c0 < dv; c0 += 64) {
      const int nz = static_cast<int>(bwd_min(64, dv - c0) / 16);
      for (std::int64_t r0 = 0; r0 < cols; r0 += 6) {
        const int nr = static_cast<int>(bwd_min(6, cols - r0));
        const std::int64_t k0 = p_.causal ? bwd_clamp(j0 + r0 - offset - q0, 0, rows) : 0;
        if (k0 >= rows) break;  // later keys are seen by even fewer rows
        Policy::tile(true, nr, nz, dvacc + r0 * dv + c0, dv, s + k0 * bcp + r0, bcp, d_o + k0 * dv + c0, dv, rows - k0,
                     kOnes);
        Policy::tile(true, nr, nz, dk + r0 * dv + c0, dv, dp + k0 * bcp + r0, bcp, q + k0 * dv + c0, dv, rows - k0,
                     kOnes);
      }
    }
    // dQ += dS·K, the reduction ending at each micro-tile's last row's reach
    float* dq = mine + l_.off_dq + (hl * p_.seq_q + q0) * dv;
    for (std::int64_t c0 = 0; c0 < dv; c0 += 64) {
      const int nz = static_cast<int>(bwd_min(64, dv - c0) / 16);
      for (std::int64_t r0 = 0; r0 < rows; r0 += 6) {
        const int nr = static_cast<int>(bwd_min(6, rows - r0));
        const std::int64_t keys = reach(r0 + nr - 1);
        if (keys == 0) continue;
        Policy::tile(false, nr, nz, dq + r0 * dv + c0, dv, dp + r0 * bcp, bcp, k + c0, dv, keys, kOnes);
      }
    }
  }

  const BackwardProblem& bp_;
  const FusedProblem& p_;
  detail::BackwardLayout l_;
  float* delta_ = nullptr;
  float* lse_ = nullptr;
};

}  // namespace
}  // namespace attnprof::cpu
