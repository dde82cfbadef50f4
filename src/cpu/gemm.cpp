// Batched GEMM through OpenBLAS sgemm.
//
// OpenBLAS threading traps (shared/research/cpu-attention.md §3.6), handled where it is opened
// (openblas.cpp):
// - pthread build (Debian's default): a large sgemm spawns OpenBLAS's own threads and takes a global
//   lock; called from our OpenMP threads that costs 2–6×. We call openblas_set_num_threads(1) and
//   parallelise over B·H ourselves.
// - OpenMP build: openblas_set_num_threads(n) calls omp_set_num_threads(n) and would shrink our own
//   parallel regions, so it is not called; nested calls are serial there already.
// Debian's OpenBLAS exports no sbgemm (§3.7), hence the fp32 panels for bf16/fp16.
#include "cpu/gemm.h"

#include <attnprof/error.h>
#include <attnprof/memory.h>
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <mutex>

#include "cpu/cpu_features.h"
#include "cpu/gemm_bf16.h"
#include "cpu/openblas.h"
#include "cpu/row_kernels.h"
#include "cpu/strided.h"

namespace attnprof::cpu {
namespace {

constexpr std::int64_t kPanelRows = 256;

// One matrix of a batched operand: rows × cols with element strides.
struct Matrix {
  const char* base;
  DType dtype;
  std::int64_t rows, cols, row_stride, col_stride, esize;
};

// fp32 with a unit stride can be handed to sgemm as is: row-major (NoTrans) when the columns are
// unit-strided, transposed when the rows are. sgemm needs the leading dimension ≥ the other extent.
bool sgemm_layout(const Matrix& m, CBLAS_TRANSPOSE* trans, blasint* ld) {
  if (m.dtype != DType::fp32) return false;
  if (m.col_stride == 1 && m.row_stride >= (m.cols > 1 ? m.cols : 1)) {
    *trans = CblasNoTrans;
    *ld = static_cast<blasint>(m.row_stride);
    return true;
  }
  if (m.row_stride == 1 && m.col_stride >= (m.rows > 1 ? m.rows : 1)) {
    *trans = CblasTrans;
    *ld = static_cast<blasint>(m.col_stride);
    return true;
  }
  return false;
}

// Converts m into a contiguous fp32 [rows][cols] panel.
void to_panel(float* panel, const Matrix& m) {
  Strided4 view;
  view.dtype = m.dtype;
  view.esize = m.esize;
  view.strides[3] = m.col_stride;
  for (std::int64_t r = 0; r < m.rows; ++r) {
    load_row(panel + r * m.cols, view, m.base + r * m.row_stride * m.esize, m.cols);
  }
}

}  // namespace

// Whether the vdpbf16ps kernel takes these operands (shapes already checked).
bool bf16_kernel_applies(const Tensor& dst, const Tensor& a, const Tensor& bm, bool transpose_b) {
  return kernel_isa() >= Isa::avx512_bf16 && a.dtype() == DType::bf16 && bm.dtype() == DType::bf16 &&
         (dst.dtype() == DType::bf16 || dst.dtype() == DType::fp32) && a.stride(3) == 1 && bm.stride(3) == 1 &&
         dst.stride(3) == 1 && a.size(3) % 2 == 0 && (!transpose_b || bm.stride(2) % 2 == 0);
}

const char* gemm_kernel_name(const Tensor& dst, const Tensor& a, const Tensor& bm, bool transpose_b) {
  if (bf16_kernel_applies(dst, a, bm, transpose_b)) return "cpu::gemm_bf16_avx512bf16";
  if (a.dtype() == DType::fp32 && dst.dtype() == DType::fp32) return "cpu::gemm_fp32_openblas";
  if (a.dtype() == DType::bf16) return "cpu::gemm_bf16_via_fp32_openblas";
  if (a.dtype() == DType::fp16) return "cpu::gemm_fp16_via_fp32_openblas";
  return "cpu::gemm_mixed_via_fp32_openblas";
}

namespace {
void batched_gemm_bf16(Tensor& dst, const Tensor& a, const Tensor& bm, bool transpose_b, float alpha) {
  const std::int64_t batch = a.size(0), heads = a.size(1), m = a.size(2), k = a.size(3);
  const std::int64_t n = dst.size(3);
  const std::int64_t group = heads / bm.size(1);
  const std::int64_t per_thread =
      detail::bf16_gemm_pack_elements(n, k) / 2 + detail::kBf16GemmStagingFloats;  // in floats
  const int threads = omp_get_max_threads();
  Tensor scratch = Tensor::empty({threads, per_thread}, DType::fp32, Device::cpu);  // counted extra memory
  const std::int64_t c_esize = static_cast<std::int64_t>(dtype_size(dst.dtype()));
#pragma omp parallel for schedule(static) num_threads(threads) if (batch * heads > 1)
  for (std::int64_t bh = 0; bh < batch * heads; ++bh) {
    const std::int64_t b = bh / heads, h = bh % heads;
    float* mine = scratch.data<float>() + omp_get_thread_num() * per_thread;
    detail::Bf16Gemm g;
    g.a = a.data<std::uint16_t>() + b * a.stride(0) + h * a.stride(1);
    g.lda = a.stride(2);
    g.b = bm.data<std::uint16_t>() + b * bm.stride(0) + (h / group) * bm.stride(1);
    g.ldb = bm.stride(2);
    g.b_rows_are_n = transpose_b;
    g.c = static_cast<char*>(dst.raw()) + (b * dst.stride(0) + h * dst.stride(1)) * c_esize;
    g.ldc = dst.stride(2);
    g.c_is_fp32 = dst.dtype() == DType::fp32;
    g.m = m;
    g.n = n;
    g.k = k;
    g.alpha = alpha;
    detail::gemm_bf16_avx512(g, reinterpret_cast<std::uint16_t*>(mine + detail::kBf16GemmStagingFloats), mine);
  }
}
}  // namespace

void batched_gemm(Tensor& dst, const Tensor& a, const Tensor& bm, bool transpose_b, float alpha) {
  const OpenBlas& blas = openblas();
  if (a.rank() != 4 || bm.rank() != 4 || dst.rank() != 4) {
    throw Error(fmt::format("cpu gemm: 4-d operands expected, got {} · {} -> {}", a.describe(), bm.describe(),
                            dst.describe()));
  }
  const std::int64_t batch = a.size(0), heads = a.size(1), m = a.size(2), k = a.size(3);
  const std::int64_t b_heads = bm.size(1);
  const std::int64_t n = transpose_b ? bm.size(2) : bm.size(3);
  const std::int64_t bk = transpose_b ? bm.size(3) : bm.size(2);
  if (bm.size(0) != batch || bk != k || b_heads == 0 || heads % b_heads != 0 || dst.size(0) != batch ||
      dst.size(1) != heads || dst.size(2) != m || dst.size(3) != n) {
    throw Error(fmt::format("cpu gemm: shapes do not fit: {} · {}{} -> {}", a.describe(), bm.describe(),
                            transpose_b ? "ᵀ" : "", dst.describe()));
  }
  if (bf16_kernel_applies(dst, a, bm, transpose_b)) {
    batched_gemm_bf16(dst, a, bm, transpose_b, alpha);
    return;
  }
  const std::int64_t group = heads / b_heads;
  auto matrix = [](const Tensor& t, std::int64_t b, std::int64_t h, bool transposed) {
    const std::int64_t es = static_cast<std::int64_t>(dtype_size(t.dtype()));
    const char* base = static_cast<const char*>(t.raw()) + (b * t.stride(0) + h * t.stride(1)) * es;
    if (transposed) return Matrix{base, t.dtype(), t.size(3), t.size(2), t.stride(3), t.stride(2), es};
    return Matrix{base, t.dtype(), t.size(2), t.size(3), t.stride(2), t.stride(3), es};
  };

  // Which operands need an fp32 panel (same answer for every (b, h): strides are uniform).
  const Matrix a0 = matrix(a, 0, 0, false), b0 = matrix(bm, 0, 0, transpose_b);
  const Matrix c0{static_cast<const char*>(dst.raw()), dst.dtype(), m, n, dst.stride(2), dst.stride(3),
                  static_cast<std::int64_t>(dtype_size(dst.dtype()))};
  CBLAS_TRANSPOSE a_trans = CblasNoTrans, b_trans = CblasNoTrans, c_trans = CblasNoTrans;
  blasint lda = static_cast<blasint>(k), ldb = static_cast<blasint>(n), ldc = static_cast<blasint>(n);
  const bool a_panel = !sgemm_layout(a0, &a_trans, &lda);
  const bool b_panel = !sgemm_layout(b0, &b_trans, &ldb);
  const bool c_panel = !sgemm_layout(c0, &c_trans, &ldc) || c_trans != CblasNoTrans;
  if (a_panel) a_trans = CblasNoTrans, lda = static_cast<blasint>(k);
  if (b_panel) b_trans = CblasNoTrans, ldb = static_cast<blasint>(n);
  if (c_panel) ldc = static_cast<blasint>(n);
  // Panels hold at most kPanelRows rows of A and of the result, so the scratch per thread stays
  // O(kPanelRows·(K + N) + K·N) instead of an S×S fp32 copy of the probabilities.
  const std::int64_t block_rows = (a_panel || c_panel) ? std::min<std::int64_t>(m, kPanelRows) : m;
  const std::int64_t per_thread =
      (a_panel ? block_rows * k : 0) + (b_panel ? k * n : 0) + (c_panel ? block_rows * n : 0);
  const int threads = omp_get_max_threads();
  Tensor scratch;  // counted by the allocator: the panels are this GEMM's extra memory
  if (per_thread > 0) scratch = Tensor::empty({threads, per_thread}, DType::fp32, Device::cpu);

#pragma omp parallel for schedule(static) num_threads(threads) if (batch * heads > 1)
  for (std::int64_t bh = 0; bh < batch * heads; ++bh) {
    const std::int64_t b = bh / heads, h = bh % heads;
    float* mine = per_thread > 0 ? scratch.data<float>() + omp_get_thread_num() * per_thread : nullptr;
    const Matrix am = matrix(a, b, h, false);
    const Matrix bmat = matrix(bm, b, h / group, transpose_b);
    char* c_base = static_cast<char*>(dst.raw()) + (b * dst.stride(0) + h * dst.stride(1)) * c0.esize;
    const float* b_ptr = reinterpret_cast<const float*>(bmat.base);
    if (b_panel) {
      to_panel(mine, bmat);
      b_ptr = mine;
      mine += k * n;
    }
    float* a_block = mine;
    float* c_block = mine + (a_panel ? block_rows * k : 0);
    for (std::int64_t r0 = 0; r0 < m; r0 += block_rows) {
      const std::int64_t rows = std::min(block_rows, m - r0);
      Matrix a_rows = am;
      a_rows.base += r0 * am.row_stride * am.esize;
      a_rows.rows = rows;
      const float* a_ptr = reinterpret_cast<const float*>(a_rows.base);
      if (a_panel) {
        to_panel(a_block, a_rows);
        a_ptr = a_block;
      }
      char* c_rows = c_base + r0 * c0.row_stride * c0.esize;
      float* c_ptr = c_panel ? c_block : reinterpret_cast<float*>(c_rows);
      blas.sgemm(CblasRowMajor, a_trans, b_trans, static_cast<blasint>(rows), static_cast<blasint>(n),
                  static_cast<blasint>(k), alpha, a_ptr, lda, b_ptr, ldb, 0.0f, c_ptr, ldc);
      if (c_panel) {
        Strided4 view;
        view.dtype = dst.dtype();
        view.esize = c0.esize;
        view.strides[3] = c0.col_stride;
        for (std::int64_t r = 0; r < rows; ++r) store_row(view, c_rows + r * c0.row_stride * c0.esize, c_ptr + r * n, n);
      }
    }
  }
}

}  // namespace attnprof::cpu
