#pragma once
// The tile driver of the CPU's fused attention, shared by the portable and the AVX-512 builds
// (each *.cpp that includes this instantiates it with its own micro-kernel Policy inside an
// anonymous namespace, so no code compiled for one ISA can be picked by the linker for another).
//
// Tiling (per work item = one (b, h, q-block of Br rows)):
//   Q block packed [Br][Dk] (Dk = D rounded up to the reduction step: 2 for bf16, 32 for AMX);
//   for each key tile of Bc keys up to the causal limit:
//     S[Br][Bc] = Q·Kᵀ   register-blocked 6 rows × 64 keys (24 zmm accumulators), K packed
//                        as [Dk/pair][BcP][pair] so one load serves 16 keys;
//     online softmax per row while S is in L1: m, l in fp32, p = 2^((s − m)·scale·log2 e)
//                        with the exp2 polynomial of exp2_poly.h;
//     O[Br][Dv] = α·O + P·V  the same micro-kernel, 6 rows × 64 head-dim columns, V packed
//                        [Bc/pair][Dv][pair]; α rescales O as it is loaded, no separate pass.
//   out = O / l (0 for a row with no visible key), lse = m·scale + ln l.
// Causal: query row i sees keys 0..i + causal_offset (0: top-left; Sk − Sq: bottom-right). Key
// tiles past the block's last row's reach are never visited (nor packed); only tiles that cross
// the diagonal are masked, and within them the micro-kernel skips 64-key chunks wholly past a
// micro-tile's last row and clamps the PV reduction to that row's visible keys. A row that sees
// no key (bottom-right, Sq > Sk: the first Sq − Sk rows) keeps l = 0 and is stored as zeros.
//
// FLOPs: 4·Sq·Sk·D per head (halved for causal, plus ~Br/2 keys of diagonal waste per block).
// Bytes: q, k, v read once per q-block pass over the head (K/V from L2/L3), out written once;
// workspace O(threads · (Br·Bc + Br·D)) plus, with prepack, one packed copy of K and V.
#include <attnprof/dtype.h>

#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/saturating.h"
#include "cpu/exp2_poly.h"
#include "cpu/fused_attention.h"
#include "cpu/row_kernels.h"

namespace attnprof::cpu {
namespace {

inline std::int64_t round_up(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }
inline std::int64_t clamp64(std::int64_t x, std::int64_t lo, std::int64_t hi) { return x < lo ? lo : (x > hi ? hi : x); }
inline std::int64_t min64(std::int64_t a, std::int64_t b) { return a < b ? a : b; }

// A Policy may set its own micro-tile and reduction padding (the AMX policy blocks 32 × 32 in
// tile registers and reduces 32 bf16 per step); the others take 6 rows × 64 columns (4 × 16 fp32
// lanes, 24 zmm accumulators) and pad reductions to their pair size.
template <class Policy>
constexpr std::int64_t micro_rows() {
  if constexpr (requires { Policy::kMicroRows; }) return Policy::kMicroRows; else return 6;
}
template <class Policy>
constexpr std::int64_t micro_cols() {
  if constexpr (requires { Policy::kMicroCols; }) return Policy::kMicroCols; else return 64;
}
template <class Policy>
constexpr std::int64_t reduce_align() {
  if constexpr (requires { Policy::kReduceAlign; }) return Policy::kReduceAlign; else return Policy::kPair;
}
// Per-thread set-up and tear-down around a thread's work (AMX: load the tile configuration on the
// thread, release the tile state after), for Policies that need it.
template <class Policy>
struct PolicyThreadScope {
  PolicyThreadScope() {
    if constexpr (requires { Policy::begin_thread(); }) Policy::begin_thread();
  }
  ~PolicyThreadScope() {
    if constexpr (requires { Policy::end_thread(); }) Policy::end_thread();
  }
  PolicyThreadScope(const PolicyThreadScope&) = delete;
  PolicyThreadScope& operator=(const PolicyThreadScope&) = delete;
};

template <class Src>
inline float to_float(Src x);
template <>
inline float to_float<float>(float x) { return x; }
template <>
inline float to_float<bf16>(bf16 x) { return bf16_to_float(x); }
template <>
inline float to_float<fp16>(fp16 x) { return fp16_to_float(x); }

template <class Policy>
class TileDriver {
 public:
  using E = typename Policy::Elem;
  static constexpr std::int64_t kPair = Policy::kPair;  // the packed layouts' pair size
  static constexpr std::int64_t kMicroRows = micro_rows<Policy>();
  static constexpr std::int64_t kMicroCols = micro_cols<Policy>();
  static constexpr std::int64_t kReduceAlign = reduce_align<Policy>();  // Q·Kᵀ over D, P·V over keys

  TileDriver(const FusedProblem& p, const TileConfig& c, int threads) : p_(p), c_(c) {
    // With enough heads to keep every thread busy, each thread takes whole heads and packs that
    // head's K/V into its own scratch right before its q-blocks (hot in L2, O(threads·Sk·D)
    // memory). With few heads (long single sequences, many threads) K/V is packed once up front
    // and the (head, q-block) items are shared out.
    head_major_ = c.prepack_kv && p.batch * p.heads >= 2 * static_cast<std::int64_t>(threads);
    br_ = c.block_q;
    bc_ = c.block_k;
    dk_ = round_up(p.head_dim, kReduceAlign);
    dv_ = round_up(p.head_dim, 16);
    bcp_ = round_up(bc_, 16);
    k_tile_ = dk_ * bcp_;
    v_tile_ = round_up(bc_, kReduceAlign) * dv_;
    kv_tiles_ = (p.seq_k + bc_ - 1) / bc_;
    q_blocks_ = (p.seq_q + br_ - 1) / br_;
    // per-thread layout, each piece 64-byte aligned
    off_q_ = 0;
    off_s_ = off_q_ + align(br_ * dk_ * sizeof(E));
    off_p_ = off_s_ + align(br_ * bcp_ * sizeof(float));
    off_o_ = off_p_ + (Policy::kProbsAliasScores ? 0 : align(br_ * bcp_ * sizeof(E)));
    off_stats_ = off_o_ + align(br_ * dv_ * sizeof(float));
    off_kv_ = off_stats_ + align(5 * br_ * sizeof(float));
    const std::int64_t kv_panel_tiles = head_major_ ? kv_tiles_ : (c.prepack_kv ? 0 : 1);
    per_thread_ = off_kv_ + align(kv_panel_tiles * (k_tile_ + v_tile_) * sizeof(E));
  }

  FusedWorkspace workspace() const {
    FusedWorkspace w;
    w.prepack_bytes = c_.prepack_kv && !head_major_ ? sat_product({p_.batch, p_.kv_heads, kv_tiles_, k_tile_ + v_tile_,
                                                                   static_cast<std::int64_t>(sizeof(E))})
                                                    : 0;
    w.per_thread_bytes = per_thread_;
    return w;
  }

  void run(void* prepack, void* scratch, int threads) {
    const std::int64_t bh = p_.batch * p_.heads;
    const std::int64_t items = bh * q_blocks_;
    const std::int64_t pack_items = p_.batch * p_.kv_heads * kv_tiles_;
    const std::int64_t head_panel = kv_tiles_ * (k_tile_ + v_tile_);
#pragma omp parallel num_threads(threads)
    {
      char* mine = static_cast<char*>(scratch) + per_thread_ * omp_get_thread_num();
      const PolicyThreadScope<Policy> thread_scope;
      if (head_major_) {
        E* panel = reinterpret_cast<E*>(mine + off_kv_);
#pragma omp for schedule(dynamic, 1)
        for (std::int64_t head = 0; head < bh; ++head) {
          const std::int64_t b = head / p_.heads, h = head % p_.heads;
          const std::int64_t hk = h / (p_.heads / p_.kv_heads);
          for (std::int64_t t = 0; t < kv_tiles_; ++t) {
            if (p_.causal && t * bc_ >= p_.seq_q + p_.causal_offset) break;  // no query row reaches these keys
            E* kt = panel + t * (k_tile_ + v_tile_);
            pack_kv(kt, kt + k_tile_, b, hk, t);
          }
          for (std::int64_t qb = q_blocks_; qb-- > 0;) process(mine, panel, b, h, qb);
        }
      } else if (c_.prepack_kv) {
#pragma omp for schedule(static)
        for (std::int64_t i = 0; i < pack_items; ++i) {
          const std::int64_t t = i % kv_tiles_;
          const std::int64_t bhk = i / kv_tiles_;
          if (p_.causal && t * bc_ >= p_.seq_q + p_.causal_offset) continue;  // no query row reaches these keys
          E* kt = static_cast<E*>(prepack) + i * (k_tile_ + v_tile_);
          pack_kv(kt, kt + k_tile_, bhk / p_.kv_heads, bhk % p_.kv_heads, t);
        }
        // Causal q-block i costs ∝ i+1: within each head hand out the last blocks (most keys)
        // first, so the cheapest blocks fill the tail; heads in order so a head's packed K/V
        // stays in cache while its blocks run.
#pragma omp for schedule(dynamic, 1)
        for (std::int64_t i = 0; i < items; ++i) {
          const std::int64_t head = i / q_blocks_;
          const std::int64_t qb = q_blocks_ - 1 - i % q_blocks_;
          const std::int64_t b = head / p_.heads, h = head % p_.heads;
          const std::int64_t hk = h / (p_.heads / p_.kv_heads);
          process(mine, static_cast<E*>(prepack) + (b * p_.kv_heads + hk) * head_panel, b, h, qb);
        }
      } else {
#pragma omp for schedule(static)
        for (std::int64_t i = 0; i < items; ++i) {
          const std::int64_t head = i / q_blocks_;
          process(mine, nullptr, head / p_.heads, head % p_.heads, i % q_blocks_);
        }
      }
    }
  }

 private:
  static std::int64_t align(std::size_t bytes) { return static_cast<std::int64_t>(round_up(static_cast<std::int64_t>(bytes), 64)); }

  template <class Src>
  void pack_kv_typed(E* kt, E* vt, std::int64_t b, std::int64_t hk, std::int64_t t) const {
    const std::int64_t j0 = t * bc_;
    const std::int64_t cols = min64(bc_, p_.seq_k - j0);
    const Src* k = static_cast<const Src*>(p_.k) + b * p_.k_strides[0] + hk * p_.k_strides[1];
    const Src* v = static_cast<const Src*>(p_.v) + b * p_.v_strides[0] + hk * p_.v_strides[1];
    std::memset(kt, 0, k_tile_ * sizeof(E));
    std::memset(vt, 0, v_tile_ * sizeof(E));
    // Kᵀ panel: walk d outer so the writes run along the packed rows (a key-outer walk wrote one
    // element per cache line and cost ~7% of the kernel at D=128).
    for (std::int64_t d = 0; d < p_.head_dim; ++d) {
      E* dst = kt + (d / kPair) * (bcp_ * kPair) + d % kPair;
      const Src* src = k + j0 * p_.k_strides[2] + d * p_.k_strides[3];
      for (std::int64_t j = 0; j < cols; ++j) dst[j * kPair] = Policy::from_float(to_float(src[j * p_.k_strides[2]]));
    }
    for (std::int64_t j = 0; j < cols; ++j) {
      E* dst = vt + (j / kPair) * (dv_ * kPair) + j % kPair;
      const Src* src = v + (j0 + j) * p_.v_strides[2];
      for (std::int64_t d = 0; d < p_.head_dim; ++d) dst[d * kPair] = Policy::from_float(to_float(src[d * p_.v_strides[3]]));
    }
  }
  void pack_kv(E* kt, E* vt, std::int64_t b, std::int64_t hk, std::int64_t t) const {
    if (Policy::fast_pack(p_.dtype) && p_.k_strides[3] == 1 && p_.v_strides[3] == 1 && p_.head_dim % kPair == 0) {
      const std::int64_t j0 = t * bc_;
      const std::int64_t cols = min64(bc_, p_.seq_k - j0);
      const std::int64_t esize = static_cast<std::int64_t>(dtype_size(p_.dtype));
      const char* k = static_cast<const char*>(p_.k) +
                      (b * p_.k_strides[0] + hk * p_.k_strides[1] + j0 * p_.k_strides[2]) * esize;
      const char* v = static_cast<const char*>(p_.v) +
                      (b * p_.v_strides[0] + hk * p_.v_strides[1] + j0 * p_.v_strides[2]) * esize;
      Policy::pack_k(kt, bcp_, k, p_.dtype, p_.k_strides[2], cols, p_.head_dim, k_tile_);
      Policy::pack_v(vt, dv_, v, p_.dtype, p_.v_strides[2], cols, p_.head_dim, v_tile_);
      return;
    }
    switch (p_.dtype) {
      case DType::bf16: pack_kv_typed<bf16>(kt, vt, b, hk, t); break;
      case DType::fp16: pack_kv_typed<fp16>(kt, vt, b, hk, t); break;
      default: pack_kv_typed<float>(kt, vt, b, hk, t); break;
    }
  }

  template <class Src>
  void pack_q_typed(E* qp, std::int64_t b, std::int64_t h, std::int64_t q0, std::int64_t rows) const {
    const Src* q = static_cast<const Src*>(p_.q) + b * p_.q_strides[0] + h * p_.q_strides[1];
    for (std::int64_t r = 0; r < rows; ++r) {
      const Src* qrow = q + (q0 + r) * p_.q_strides[2];
      E* dst = qp + r * dk_;
      for (std::int64_t d = 0; d < p_.head_dim; ++d) dst[d] = Policy::from_float(to_float(qrow[d * p_.q_strides[3]]));
      for (std::int64_t d = p_.head_dim; d < dk_; ++d) dst[d] = Policy::from_float(0.0f);
    }
  }
  void pack_q(E* qp, std::int64_t b, std::int64_t h, std::int64_t q0, std::int64_t rows) const {
    switch (p_.dtype) {
      case DType::bf16: pack_q_typed<bf16>(qp, b, h, q0, rows); break;
      case DType::fp16: pack_q_typed<fp16>(qp, b, h, q0, rows); break;
      default: pack_q_typed<float>(qp, b, h, q0, rows); break;
    }
  }

  // kv_panel: this head's packed K/V tiles, or null to pack each tile as it is reached.
  void process(char* mine, const E* kv_panel, std::int64_t b, std::int64_t h, std::int64_t qb) const {
    E* qp = reinterpret_cast<E*>(mine + off_q_);
    float* s = reinterpret_cast<float*>(mine + off_s_);
    E* probs = Policy::kProbsAliasScores ? reinterpret_cast<E*>(s) : reinterpret_cast<E*>(mine + off_p_);
    float* o = reinterpret_cast<float*>(mine + off_o_);
    float* row_max = reinterpret_cast<float*>(mine + off_stats_);
    float* row_sum = row_max + br_;
    float* alpha = row_sum + br_;
    float* m_next = alpha + br_;
    float* m_shift = m_next + br_;

    const std::int64_t hk = h / (p_.heads / p_.kv_heads);
    const std::int64_t q0 = qb * br_;
    const std::int64_t rows = min64(br_, p_.seq_q - q0);
    // keys the block's last row sees (0 when every row of the block is fully masked)
    const std::int64_t kv_end = p_.causal ? clamp64(q0 + rows + p_.causal_offset, 0, p_.seq_k) : p_.seq_k;
    const float c = p_.scale * exp2_poly::kLog2e;
    const float neg_inf = -std::numeric_limits<float>::infinity();

    pack_q(qp, b, h, q0, rows);
    for (std::int64_t r = 0; r < rows; ++r) {
      row_max[r] = neg_inf;
      row_sum[r] = 0.0f;
    }
    std::memset(o, 0, static_cast<std::size_t>(rows * dv_) * sizeof(float));

    const std::int64_t tiles = (kv_end + bc_ - 1) / bc_;
    for (std::int64_t t = 0; t < tiles; ++t) {
      const std::int64_t j0 = t * bc_;
      const std::int64_t cols = min64(bc_, kv_end - j0);
      const std::int64_t cols_p = round_up(cols, 16);
      const std::int64_t cols_pair = round_up(cols, kReduceAlign);
      const E* kt;
      const E* vt;
      if (kv_panel != nullptr) {
        kt = kv_panel + t * (k_tile_ + v_tile_);
        vt = kt + k_tile_;
      } else {
        E* kbuf = reinterpret_cast<E*>(mine + off_kv_);
        pack_kv(kbuf, kbuf + k_tile_, b, hk, t);
        kt = kbuf;
        vt = kbuf + k_tile_;
      }
      // visible keys of row r in this tile
      auto visible = [&](std::int64_t r) {
        return p_.causal ? clamp64(q0 + r + p_.causal_offset - j0 + 1, 0, cols) : cols;
      };

      // S = Q·Kᵀ
      for (std::int64_t c0 = 0; c0 < cols_p; c0 += kMicroCols) {
        const int nz = static_cast<int>(min64(kMicroCols, cols_p - c0) / 16);
        for (std::int64_t r0 = 0; r0 < rows; r0 += kMicroRows) {
          const int nr = static_cast<int>(min64(kMicroRows, rows - r0));
          if (visible(r0 + nr - 1) <= c0) continue;  // the whole chunk is past the diagonal
          Policy::tile(nr, nz, s + r0 * bcp_ + c0, bcp_, qp + r0 * dk_, dk_, kt + c0 * kPair, bcp_ * kPair, dk_,
                       nullptr);
        }
      }
      // online softmax on the tile; m is kept in the raw score domain and scores become
      // 2^((s − m)·scale·log2 e), so s − m is exact however large the scores are
      for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t n = visible(r);
        float m_new = row_max[r];
        if (n > 0) {
          const float tile_max = Policy::row_max(s + r * bcp_, n);
          m_new = tile_max > m_new ? tile_max : m_new;
          if (tile_max != tile_max) m_new = tile_max;  // NaN input stays visible
        }
        m_next[r] = m_new;
        m_shift[r] = m_new == neg_inf ? 0.0f : m_new;  // a row with nothing visible yet subtracts 0
      }
      // α = 2^((m_old − m_shift)·c) for all rows at once (a scalar exp per row cost ~5% of the kernel)
      Policy::exp2_diff(alpha, row_max, m_shift, c, rows);
      for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t n = visible(r);
        E* prow = probs + r * bcp_;
        const float tile_sum = n > 0 ? Policy::probs(prow, s + r * bcp_, c, m_shift[r], n) : 0.0f;
        for (std::int64_t j = n; j < cols_pair; ++j) prow[j] = Policy::from_float(0.0f);
        row_sum[r] = row_sum[r] * alpha[r] + tile_sum;
        row_max[r] = m_next[r];
      }
      // O = α·O + P·V
      for (std::int64_t c0 = 0; c0 < dv_; c0 += kMicroCols) {
        const int nz = static_cast<int>(min64(kMicroCols, dv_ - c0) / 16);
        for (std::int64_t r0 = 0; r0 < rows; r0 += kMicroRows) {
          const int nr = static_cast<int>(min64(kMicroRows, rows - r0));
          const std::int64_t keys = round_up(visible(r0 + nr - 1), kReduceAlign);
          Policy::tile(nr, nz, o + r0 * dv_ + c0, dv_, probs + r0 * bcp_, bcp_, vt + c0 * kPair, dv_ * kPair, keys,
                       alpha + r0);
        }
      }
    }
    store_output(o, row_max, row_sum, b, h, q0, rows);
  }

  void store_output(float* o, const float* row_max, const float* row_sum, std::int64_t b, std::int64_t h,
                    std::int64_t q0, std::int64_t rows) const {
    const RowKernels& rk = Policy::rows();
    const std::int64_t esize = static_cast<std::int64_t>(dtype_size(p_.dtype));
    for (std::int64_t r = 0; r < rows; ++r) {
      float* orow = o + r * dv_;
      const float l = row_sum[r];
      rk.scale(orow, l > 0.0f ? 1.0f / l : 0.0f, p_.head_dim);  // nothing visible: zeros, as PyTorch's fused kernels
      char* dst = static_cast<char*>(p_.out) +
                  (b * p_.out_strides[0] + h * p_.out_strides[1] + (q0 + r) * p_.out_strides[2]) * esize;
      if (p_.out_strides[3] == 1) {
        rk.store(dst, p_.dtype, orow, p_.head_dim);
      } else {
        for (std::int64_t d = 0; d < p_.head_dim; ++d) rk.store(dst + d * p_.out_strides[3] * esize, p_.dtype, orow + d, 1);
      }
      if (p_.lse != nullptr) {
        p_.lse[(b * p_.heads + h) * p_.seq_q + q0 + r] =
            l > 0.0f ? row_max[r] * p_.scale + std::log(l) : -std::numeric_limits<float>::infinity();
      }
    }
  }

  const FusedProblem& p_;
  TileConfig c_;
  std::int64_t br_, bc_, dk_, dv_, bcp_, k_tile_, v_tile_, kv_tiles_, q_blocks_;
  std::int64_t off_q_, off_s_, off_p_, off_o_, off_stats_, off_kv_, per_thread_;
  bool head_major_ = false;
};

}  // namespace
}  // namespace attnprof::cpu
