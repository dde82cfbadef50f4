#pragma once
// Batched GEMM through cuBLASLt, behind a narrow class. bf16/fp16 run on the tensor cores with fp32
// accumulation; fp32 runs CUBLAS_COMPUTE_32F_PEDANTIC (FFMA, no TF32) when tensor cores are not
// allowed — what PyTorch's math backend gets (sm80_xmma_gemm_f32f32…ffma) — and TF32 otherwise.
// The heuristic's choice is cached per problem, so a repeated forward costs one cublasLtMatmul.
#include <attnprof/tensor.h>
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace attnprof::cuda {

// One row-major GEMM batch: D[i] = alpha · A[i] (M×K) · B[i] (K×N), i < batch. Leading dims in
// elements; b_transposed: B is stored N×K (row stride ldb); a_transposed: A is stored K×M.
struct GemmProblem {
  DType a_type, d_type;
  std::int64_t m, n, k;
  std::int64_t lda, ldb, ldd;
  bool a_transposed, b_transposed;
  std::int64_t batch;
  std::int64_t stride_a, stride_b, stride_d;
  bool tensor_cores;
  int alignment_a, alignment_b, alignment_d;  // bytes, up to 16
  auto key() const {
    return std::make_tuple(static_cast<int>(a_type), static_cast<int>(d_type), m, n, k, lda, ldb, ldd, a_transposed,
                           b_transposed, batch, stride_a, stride_b, stride_d, tensor_cores, alignment_a, alignment_b,
                           alignment_d);
  }
};

class CublasLtGemm {
 public:
  CublasLtGemm();
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  void run(const GemmProblem& problem, void* d, const void* a, const void* b, float alpha, cudaStream_t stream);

 private:
  struct Plan;
  using Key = decltype(std::declval<GemmProblem>().key());
  Plan& plan_for(const GemmProblem& problem);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  std::mutex mutex_;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

// Splits dst[b,h] = alpha · a[b,h] · op(bm[b, h/g]) into as few strided-batch GEMMs as the strides
// allow (one for contiguous bhsd; GQA folds the g query heads of a group into M when they are
// adjacent), and runs them.
void batched_gemm(CublasLtGemm& gemm, Tensor& dst, const Tensor& a, const Tensor& bm, bool transpose_b, float alpha,
                  bool allow_tensor_cores, cudaStream_t stream);

}  // namespace attnprof::cuda
