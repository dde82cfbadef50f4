#include "cuda/cuda_backend.h"

#include <attnprof/error.h>
#include <attnprof/profiler.h>

#include <fmt/format.h>

#include <mutex>

#include "core/saturating.h"
#include "cuda/attention_backward.h"
#include "cuda/check.h"
#include "cuda/cudnn_sdpa.h"
#include "cuda/cudnn_sdpa_backward.h"
#include "cuda/problem_text.h"
#include "cuda/tensor_layout.h"
#include "cuda/decode_forward.h"
#include "cuda/device_memory.h"
#include "cuda/fused_attention.h"
#include "cuda/fused_padding.h"
#include "cuda/gemm_cublaslt.h"
#include "cuda/hopper/flash_bwd.h"
#include "cuda/kernels.h"
#include "cuda/nvtx.h"
#include "ops/cuda_unavailable.h"
#include "ops/fused_head_dim.h"

namespace attnprof::cuda {
namespace {

bool is_host(const Tensor& t) { return t.device() == Device::cpu; }

// One line about a cuDNN plan just built (the cudnn variant prints it once, apart from per-call time).
std::string describe_plan(const AttentionSpec& spec, const CudnnPlanInfo& info) {
  return fmt::format("plan built for {}x{}x{}x{}{} in {:.1f} ms ({}, engine {}, kernel cfg {}, heuristics config {} "
                     "of {}, workspace {} B{}{}{})",
                     spec.batch, spec.heads, spec.seq_q, spec.head_dim, spec.causal ? " causal" : "", info.build_ms,
                     info.graph, info.engine_id, info.kernel_cfg, info.config_index, info.configs_offered,
                     info.workspace_bytes, info.nondeterministic == 1 ? ", nondeterministic (cuDNN's note)" : "",
                     info.timed.empty() ? "" : "; timed: ", info.timed);
}


class CudaBackend final : public ops::Backend {
 public:
  CudaBackend() {
    ATTNPROF_CUDA_CHECK(cudaSetDevice(0));
    ATTNPROF_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    set_allocation_stream(stream_);
    gemm_ = std::make_unique<CublasLtGemm>();
  }
  ~CudaBackend() override = default;  // process lifetime: the driver may be gone at exit

  cudaStream_t stream() const { return stream_; }

  void batched_gemm(Tensor& dst, const Tensor& a, const Tensor& bm, bool transpose_b, float alpha,
                    bool allow_tensor_cores) override {
    NvtxRange range("gemm");
    cuda::batched_gemm(*gemm_, dst, a, bm, transpose_b, alpha, allow_tensor_cores, stream_);
  }

  void copy(Tensor& dst, const Tensor& src) override {
    NvtxRange range("copy");
    if (is_host(dst) || is_host(src)) {
      copy_host_device(dst, src);
      return;
    }
    // A same-dtype dense copy with one layout is a DMA (Memcpy DtoD in the trace, as PyTorch's clone).
    if (copyable_as_bytes(dst, src)) {
      ATTNPROF_CUDA_CHECK(cudaMemcpyAsync(dst.raw(), src.raw(), static_cast<std::size_t>(src.numel()) * dtype_size(src.dtype()),
                                          cudaMemcpyDeviceToDevice, stream_));
      return;
    }
    launch_convert(make_arg(dst), make_arg(src), stream_);
  }

  void fill(Tensor& dst, double value) override {
    NvtxRange range("fill");
    launch_fill(make_arg(dst), value, stream_);
  }
  void mul_scalar(Tensor& dst, const Tensor& src, double scalar) override {
    NvtxRange range("mul");
    launch_mul_scalar(make_arg(dst), make_arg(src), scalar, stream_);
  }
  void add(Tensor& dst, const Tensor& a, const Tensor& b) override {
    NvtxRange range("add");
    launch_add(make_arg(dst), make_arg(a), make_arg(b), stream_);
  }
  void masked_fill(Tensor& dst, const Tensor& src, const Tensor& mask, double value) override {
    NvtxRange range("masked_fill");
    launch_masked_fill(make_arg(dst), make_arg(src), make_arg(mask), value, stream_);
  }
  void where(Tensor& dst, const Tensor& condition, const Tensor& if_true, const Tensor& if_false) override {
    NvtxRange range("where");
    launch_where(make_arg(dst), make_arg(condition), make_arg(if_true), make_arg(if_false), stream_);
  }
  void logical_not(Tensor& dst, const Tensor& src) override {
    NvtxRange range("logical_not");
    launch_logical_not(make_arg(dst), make_arg(src), stream_);
  }
  void isneginf(Tensor& dst, const Tensor& src) override {
    NvtxRange range("isneginf");
    launch_isneginf(make_arg(dst), make_arg(src), stream_);
  }
  void tril(Tensor& dst, const Tensor& src, std::int64_t diagonal) override {
    NvtxRange range("tril");
    launch_triangle(make_arg(dst), make_arg(src), diagonal, true, stream_);
  }
  void triu(Tensor& dst, const Tensor& src, std::int64_t diagonal) override {
    NvtxRange range("triu");
    launch_triangle(make_arg(dst), make_arg(src), diagonal, false, stream_);
  }
  void softmax_lastdim(Tensor& dst, const Tensor& src) override {
    NvtxRange range("softmax");
    launch_softmax_lastdim(make_arg(dst), make_arg(src), stream_);
  }
  void all_lastdim(Tensor& dst, const Tensor& src) override {
    NvtxRange range("all");
    launch_all_lastdim(make_arg(dst), make_arg(src), stream_);
  }
  void scale_mask_softmax(Tensor& dst, const Tensor& src, double scale, bool causal,
                          std::int64_t causal_offset) override {
    NvtxRange range("scale_mask_softmax");
    launch_scale_mask_softmax(make_arg(dst), make_arg(src), static_cast<float>(scale), causal, causal_offset, stream_);
  }
  void softmax_backward(Tensor& dst, const Tensor& grad, const Tensor& probs, double scale) override {
    NvtxRange range("softmax_backward");
    launch_softmax_backward(make_arg(dst), make_arg(grad), make_arg(probs), static_cast<float>(scale), stream_);
  }
  void sum_head_groups(Tensor& dst, const Tensor& src) override {
    NvtxRange range("sum_head_groups");
    launch_sum_head_groups(make_arg(dst), make_arg(src), stream_);
  }
  void attention_efficient(const AttentionSpec& spec, Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                           Tensor* lse) override {
    NvtxRange range("attention_efficient");
    if (auto why = fused_attention_refusal(spec)) throw UsageError(*why);
    run_fused_attention(spec, out, q, k, v, lse, launch_efficient_attention, stream_);
  }
  void attention_flash(const AttentionSpec& spec, Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                       Tensor* lse) override {
    NvtxRange range("attention_flash");
    if (auto why = fused_attention_refusal(spec)) throw UsageError(*why);
    if (const DecodePlan plan = flash_decode_plan(DecodeShape::of(spec)); plan.runs())  // few query rows, many keys
      return launch_decode_attention(fused_attention_args(spec, out, q, k, v, lse), plan, stream_);
    run_fused_attention(spec, out, q, k, v, lse, launch_flash_attention, stream_);
  }
  void attention_efficient_backward(const AttentionSpec& spec, Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& q,
                                    const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                                    const Tensor& dout) override {
    NvtxRange range("attention_efficient_backward");
    run_fused_backward(spec, dq, dk, dv, q, k, v, out, lse, dout, stream_);
  }
  void attention_flash_backward(const AttentionSpec& spec, Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& q,
                                const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                                const Tensor& dout) override {
    NvtxRange range("attention_flash_backward");
    run_fused_backward(spec, dq, dk, dv, q, k, v, out, lse, dout, stream_, hopper::flash_backward_runs_sm90(spec));
  }
  std::optional<std::string> fused_refusal(const AttentionSpec& spec) const override {
    return fused_attention_refusal(spec);
  }
  // The log-sum-exp, the padded copies of a head dim that is not a multiple of 8 (fused_padding.h)
  // and, for flash's split-KV decode, its partial outputs (decode_plan.h).
  std::int64_t fused_workspace_bytes(const AttentionSpec& spec, bool flash) const override {
    const std::int64_t base = sat_add(Backend::fused_workspace_bytes(spec, flash), padded_copy_bytes(spec));
    if (!flash || fused_attention_refusal(spec)) return base;
    const DecodeShape shape = DecodeShape::of(spec);
    return sat_add(base, flash_decode_plan(shape).workspace_bytes(shape));
  }
  // Δ (Backend's default), the padded copies of a head dim that is not a multiple of 8
  // (fused_padding.h) and, for flash's sm_90a backward, its fp32 dQ accumulator.
  std::int64_t fused_backward_workspace_bytes(const AttentionSpec& spec, bool flash) const override {
    const std::int64_t base =
        sat_add(Backend::fused_backward_workspace_bytes(spec, flash), padded_backward_copy_bytes(spec));
    if (!flash || !hopper::flash_backward_runs_sm90(spec)) return base;  // it takes head dims 1..128
    return sat_add(base, hopper::flash_backward_sm90_accumulator_bytes(spec));
  }
  std::optional<std::string> cudnn_sdpa_prepare(const AttentionSpec& spec) override {
    CudnnPlanInfo info = cuda::cudnn_sdpa_prepare(spec, false);
    if (info.cache_hit) return std::nullopt;
    return describe_plan(spec, info);
  }
  void cudnn_sdpa_forward(const AttentionSpec& spec, Tensor& out, const Tensor& q, const Tensor& k,
                          const Tensor& v) override {
    cuda::cudnn_sdpa_forward(spec, out, q, k, v, nullptr, stream_);
  }
  void cudnn_sdpa_forward_with_stats(const AttentionSpec& spec, Tensor& out, const Tensor& q, const Tensor& k,
                                     const Tensor& v, Tensor& stats) override {
    cuda::cudnn_sdpa_forward(spec, out, q, k, v, &stats, stream_);
  }
  std::optional<std::string> cudnn_sdpa_backward_prepare(const AttentionSpec& spec) override {
    const CudnnPlanInfo forward = cuda::cudnn_sdpa_prepare(spec, true);
    const CudnnPlanInfo backward = cuda::cudnn_sdpa_backward_prepare(spec);
    if (forward.cache_hit && backward.cache_hit) return std::nullopt;
    return fmt::format("forward with Stats: {}; backward: {}",
                       forward.cache_hit ? "plan cached" : describe_plan(spec, forward),
                       backward.cache_hit ? "plan cached" : describe_plan(spec, backward));
  }
  void cudnn_sdpa_backward(const AttentionSpec& spec, Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& q,
                           const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& stats,
                           const Tensor& dout) override {
    cuda::cudnn_sdpa_backward(spec, dq, dk, dv, q, k, v, out, stats, dout, stream_);
  }
  std::int64_t cudnn_sdpa_backward_workspace_bytes(const AttentionSpec& spec) const override {
    return cuda::cudnn_sdpa_backward_workspace_bytes(spec);
  }
  void synchronize() override { ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(stream_)); }
  void release_cached_memory() override { cuda::release_cached_memory(); }
  void push_range(const char* name) override { nvtxRangePushA(name); }
  void pop_range() override { nvtxRangePop(); }
  std::optional<std::int64_t> free_bytes() const override {
    std::size_t free = 0, total = 0;
    ATTNPROF_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return static_cast<std::int64_t>(free);
  }
  std::string model_name() const override {
    cudaDeviceProp properties{};
    ATTNPROF_CUDA_CHECK(cudaGetDeviceProperties(&properties, 0));  // device 0, as cudaSetDevice above
    return properties.name;
  }

 private:
  void copy_host_device(Tensor& dst, const Tensor& src) {
    if (!copyable_as_bytes(dst, src))
      throw Error(fmt::format("cuda copy between host and device needs one shape, dtype and dense layout on both sides "
                              "(as make_inputs makes them, bhsd or bshd): {} <- {}",
                              dst.describe(), src.describe()));
    const std::size_t bytes = static_cast<std::size_t>(src.numel()) * dtype_size(src.dtype());
    const cudaMemcpyKind kind = is_host(dst) ? (is_host(src) ? cudaMemcpyHostToHost : cudaMemcpyDeviceToHost)
                                             : cudaMemcpyHostToDevice;
    ATTNPROF_CUDA_CHECK(cudaMemcpyAsync(dst.raw(), src.raw(), bytes, kind, stream_));
    // Pageable host memory: the host side must not change before the copy is done.
    ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  cudaStream_t stream_ = nullptr;
  std::unique_ptr<CublasLtGemm> gemm_;
};

std::mutex& creation_mutex() {
  static std::mutex m;
  return m;
}
CudaBackend* g_backend = nullptr;

}  // namespace

FusedAttentionArgs fused_attention_args(const AttentionSpec& spec, const Tensor& out, const Tensor& q, const Tensor& k,
                                        const Tensor& v, Tensor* lse) {
  check_fused_rows("fused attention", {&out, &q, &k, &v});
  if (lse != nullptr && !is_row_stats(*lse, spec.batch * spec.heads * spec.seq_q))
    throw Error("fused attention: lse must be a contiguous fp32 [B, H, Sq] tensor");
  FusedAttentionArgs a;
  a.q = q.raw();
  a.k = k.raw();
  a.v = v.raw();
  a.o = out.raw();
  a.lse = lse ? lse->data<float>() : nullptr;
  a.batch = spec.batch;
  a.heads = spec.heads;
  a.kv_heads = spec.kv_heads;
  a.seq_q = spec.seq_q;
  a.seq_k = spec.seq_k;
  a.head_dim = spec.head_dim;
  for (int d = 0; d < 3; ++d) {
    a.q_stride[d] = q.stride(d);
    a.k_stride[d] = k.stride(d);
    a.v_stride[d] = v.stride(d);
    a.o_stride[d] = out.stride(d);
  }
  a.softmax_scale = static_cast<float>(softmax_scale_of(spec));
  a.causal = spec.causal;
  a.causal_offset = spec.causal_offset();
  a.dtype = spec.dtype;
  return a;
}

std::optional<std::string> fused_attention_refusal(const AttentionSpec& spec) {
  if (spec.dtype != DType::bf16 && spec.dtype != DType::fp16)
    return fmt::format("dtype {}: the fused GPU kernels take bf16 or fp16", dtype_name(spec.dtype));
  return ops::fused_head_dim_refusal(spec.head_dim);
}

static_assert(ops::kCudaErrorStubLibrary == cudaErrorStubLibrary);
static_assert(ops::kCudaErrorInsufficientDriver == cudaErrorInsufficientDriver);
static_assert(ops::kCudaErrorNoDevice == cudaErrorNoDevice);

std::optional<std::string> device_unavailable_reason() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return ops::cuda_unavailable_reason(static_cast<int>(status), cudaGetErrorName(status), cudaGetErrorString(status),
                                        ops::nvidia_driver_library_loads());
  }
  if (count == 0) return std::string("no NVIDIA GPU is present");
  return std::nullopt;
}

ops::Backend& cuda_backend() {
  std::lock_guard lock(creation_mutex());
  if (g_backend == nullptr) {
    if (auto why = device_unavailable_reason())
      throw UsageError(fmt::format("device cuda: no usable GPU: {}; allowed here: cpu", *why));
    // Never destroyed: CUDA objects must not be released after the driver unloads at exit.
    g_backend = new CudaBackend();
  }
  return *g_backend;
}

cudaStream_t backend_stream() {
  cuda_backend();
  return g_backend->stream();
}

}  // namespace attnprof::cuda
