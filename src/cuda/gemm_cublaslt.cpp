#include "cuda/gemm_cublaslt.h"

#include <attnprof/error.h>
#include <cuda_runtime_api.h>

#include <fmt/format.h>

#include "cuda/check.h"

namespace attnprof::cuda {
namespace {

// cuBLAS recommends 32 MiB of workspace on Hopper for the best kernels.
constexpr std::size_t kWorkspaceBytes = 32u << 20;

cudaDataType_t cuda_type(DType dtype) {
  switch (dtype) {
    case DType::bf16: return CUDA_R_16BF;
    case DType::fp16: return CUDA_R_16F;
    case DType::fp32: return CUDA_R_32F;
    default: throw Error(fmt::format("cuda matmul: dtype {} is not supported (bf16, fp16, fp32)", dtype_name(dtype)));
  }
}

int alignment_of(const void* ptr, std::int64_t ld, std::int64_t batch_stride, DType dtype) {
  auto bytes = [&](std::int64_t elements) { return static_cast<std::uint64_t>(elements) * dtype_size(dtype); };
  std::uint64_t bits = reinterpret_cast<std::uintptr_t>(ptr) | bytes(ld) | bytes(batch_stride) | 16u;
  return static_cast<int>(bits & (~bits + 1));  // lowest set bit, at most 16
}

struct LayoutDeleter {
  void operator()(cublasLtMatrixLayoutOpaque_t* p) const { cublasLtMatrixLayoutDestroy(p); }
};

}  // namespace

struct CublasLtGemm::Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Plan() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

CublasLtGemm::CublasLtGemm() {
  ATTNPROF_CUBLAS_CHECK(cublasLtCreate(&handle_));
  workspace_bytes_ = kWorkspaceBytes;
  ATTNPROF_CUDA_CHECK(cudaMalloc(&workspace_, workspace_bytes_));
}

CublasLtGemm::~CublasLtGemm() {
  plans_.clear();
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(handle_);
}

// Row-major D (M×N) = A (M×K) · B (K×N) is column-major Dᵀ (N×M) = Bᵀ (N×K) · Aᵀ (K×M): cuBLASLt's
// "A" is our B and its "B" is our A; a row-major matrix with row stride ld is the column-major
// transpose with the same ld.
CublasLtGemm::Plan& CublasLtGemm::plan_for(const GemmProblem& p) {
  std::lock_guard lock(mutex_);
  auto found = plans_.find(p.key());
  if (found != plans_.end()) return *found->second;
  auto plan = std::make_unique<Plan>();
  cudaDataType_t ab_type = cuda_type(p.a_type), d_type = cuda_type(p.d_type);
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  if (p.a_type == DType::fp32) compute = p.tensor_cores ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F_PEDANTIC;
  ATTNPROF_CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan->op, compute, CUDA_R_32F));
  cublasOperation_t op_lt_a = p.b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;  // our B
  cublasOperation_t op_lt_b = p.a_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;  // our A
  ATTNPROF_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &op_lt_a, sizeof op_lt_a));
  ATTNPROF_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &op_lt_b, sizeof op_lt_b));
  // Stored shapes (column-major rows × cols): our B as N×K (if stored N×K row-major: K×N col-major).
  std::uint64_t lt_a_rows = p.b_transposed ? p.k : p.n, lt_a_cols = p.b_transposed ? p.n : p.k;
  std::uint64_t lt_b_rows = p.a_transposed ? p.m : p.k, lt_b_cols = p.a_transposed ? p.k : p.m;
  ATTNPROF_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->a, ab_type, lt_a_rows, lt_a_cols, p.ldb));
  ATTNPROF_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->b, ab_type, lt_b_rows, lt_b_cols, p.lda));
  ATTNPROF_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->d, d_type, p.n, p.m, p.ldd));
  auto set_batch = [&](cublasLtMatrixLayout_t layout, std::int64_t stride) {
    std::int32_t count = static_cast<std::int32_t>(p.batch);
    ATTNPROF_CUBLAS_CHECK(
        cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    ATTNPROF_CUBLAS_CHECK(
        cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  };
  set_batch(plan->a, p.stride_b);
  set_batch(plan->b, p.stride_a);
  set_batch(plan->d, p.stride_d);

  cublasLtMatmulPreference_t pref = nullptr;
  ATTNPROF_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, cublasStatus_t (*)(cublasLtMatmulPreference_t)> pref_guard(
      pref, &cublasLtMatmulPreferenceDestroy);
  std::uint64_t ws = workspace_bytes_;
  std::uint32_t align_lt_a = p.alignment_b, align_lt_b = p.alignment_a, align_d = p.alignment_d;
  ATTNPROF_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  ATTNPROF_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                             &align_lt_a, sizeof align_lt_a));
  ATTNPROF_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                             &align_lt_b, sizeof align_lt_b));
  ATTNPROF_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                                             &align_d, sizeof align_d));
  ATTNPROF_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                                             &align_d, sizeof align_d));
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  ATTNPROF_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle_, plan->op, plan->a, plan->b, plan->d, plan->d, pref, 1,
                                                       &result, &returned));
  if (returned == 0)
    throw Error(fmt::format("cuBLASLt has no algorithm for a {}x{}x{} {} GEMM (batch {})", p.m, p.n, p.k,
                            dtype_name(p.a_type), p.batch));
  plan->algo = result.algo;
  auto [it, inserted] = plans_.emplace(p.key(), std::move(plan));
  return *it->second;
}

void CublasLtGemm::run(const GemmProblem& p, void* d, const void* a, const void* b, float alpha, cudaStream_t stream) {
  Plan& plan = plan_for(p);
  float beta = 0.0f;
  ATTNPROF_CUBLAS_CHECK(cublasLtMatmul(handle_, plan.op, &alpha, b, plan.a, a, plan.b, &beta, d, plan.d, d, plan.d,
                                       &plan.algo, workspace_, workspace_bytes_, stream));
}

namespace {

struct MatrixView {
  std::int64_t ld = 0;
  bool transposed = false;  // stored as the transpose (column stride != 1, row stride == 1)
};

MatrixView matrix_view(const Tensor& t, const char* name) {
  std::int64_t rs = t.stride(-2), cs = t.stride(-1);
  if (cs == 1 && (rs >= t.size(-1) || t.size(-2) == 1)) return {std::max<std::int64_t>(rs, t.size(-1)), false};
  if (rs == 1 && (cs >= t.size(-2) || t.size(-1) == 1)) return {std::max<std::int64_t>(cs, t.size(-2)), true};
  throw Error(fmt::format("cuda matmul: {} {} needs unit stride in one of its last two dims", name, t.describe()));
}

}  // namespace

void batched_gemm(CublasLtGemm& gemm, Tensor& dst, const Tensor& a, const Tensor& bm, bool transpose_b, float alpha,
                  bool allow_tensor_cores, cudaStream_t stream) {
  if (a.rank() != 4 || bm.rank() != 4 || dst.rank() != 4)
    throw Error("cuda matmul: operands must be rank 4 [B,H,M,K]");
  const std::int64_t B = a.size(0), H = a.size(1), M = a.size(2), K = a.size(3);
  const std::int64_t Hb = bm.size(1);
  const std::int64_t N = transpose_b ? bm.size(2) : bm.size(3);
  if ((transpose_b ? bm.size(3) : bm.size(2)) != K || dst.size(2) != M || dst.size(3) != N || dst.size(0) != B ||
      dst.size(1) != H || bm.size(0) != B || Hb <= 0 || H % Hb != 0)
    throw Error(fmt::format("cuda matmul: shapes do not match: {} · {}{} -> {}", a.describe(), bm.describe(),
                            transpose_b ? "ᵀ" : "", dst.describe()));
  if (a.dtype() != bm.dtype()) throw Error("cuda matmul: a and b dtypes differ");
  const std::int64_t group = H / Hb;
  MatrixView av = matrix_view(a, "a"), bv = matrix_view(bm, "b"), dv = matrix_view(dst, "dst");
  if (dv.transposed) throw Error("cuda matmul: dst must have unit stride in its last dim");
  const std::size_t ea = dtype_size(a.dtype()), ed = dtype_size(dst.dtype());

  GemmProblem p{};
  p.a_type = a.dtype();
  p.d_type = dst.dtype();
  p.n = N;
  p.k = K;
  p.lda = av.ld;
  p.ldb = bv.ld;
  p.ldd = dv.ld;
  p.a_transposed = av.transposed;
  p.b_transposed = transpose_b != bv.transposed;
  p.tensor_cores = allow_tensor_cores;

  // Fold the g query heads that share a kv head into M when their rows are adjacent in memory
  // (a[b, h+1] starts where a[b, h]'s M rows end), for a and dst alike.
  const bool fold_group = group > 1 && !av.transposed && a.stride(1) == M * av.ld && dst.stride(1) == M * dv.ld;
  const std::int64_t heads_per_call = fold_group ? Hb : (group == 1 ? H : Hb);
  p.m = fold_group ? M * group : M;
  const std::int64_t a_head_step = fold_group ? group * a.stride(1) : (group == 1 ? a.stride(1) : group * a.stride(1));
  const std::int64_t d_head_step = fold_group ? group * dst.stride(1) : (group == 1 ? dst.stride(1) : group * dst.stride(1));
  const std::int64_t b_head_step = bm.stride(1);
  const std::int64_t group_calls = (fold_group || group == 1) ? 1 : group;
  // Collapse batch and heads into one batch dimension when the strides line up.
  const bool collapse_batch = B == 1 || (a.stride(0) == heads_per_call * a_head_step &&
                                         dst.stride(0) == heads_per_call * d_head_step && bm.stride(0) == Hb * b_head_step);
  p.batch = collapse_batch ? B * heads_per_call : heads_per_call;
  p.stride_a = a_head_step;
  p.stride_b = b_head_step;
  p.stride_d = d_head_step;
  const std::int64_t batch_calls = collapse_batch ? 1 : B;

  auto* a_base = static_cast<const char*>(a.raw());
  auto* b_base = static_cast<const char*>(bm.raw());
  auto* d_base = static_cast<char*>(dst.raw());
  for (std::int64_t bi = 0; bi < batch_calls; ++bi) {
    for (std::int64_t j = 0; j < group_calls; ++j) {
      const char* pa = a_base + (bi * a.stride(0) + j * a.stride(1)) * ea;
      const char* pb = b_base + (bi * bm.stride(0)) * ea;
      char* pd = d_base + (bi * dst.stride(0) + j * dst.stride(1)) * ed;
      p.alignment_a = alignment_of(pa, p.lda, p.stride_a, a.dtype());
      p.alignment_b = alignment_of(pb, p.ldb, p.stride_b, a.dtype());
      p.alignment_d = alignment_of(pd, p.ldd, p.stride_d, dst.dtype());
      gemm.run(p, pd, pa, pb, alpha, stream);
    }
  }
}

}  // namespace attnprof::cuda
