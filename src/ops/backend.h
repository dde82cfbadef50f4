#pragma once
// The seam between the ops the variants compose and the device that runs them. One Backend per
// device; the CPU one lives in src/cpu, the CUDA one in src/cuda (a module opened on first need).
//
// Conventions for every call:
// - destination first; tensors are rank <= 4 and indexed [B, H, S, D] (or [B, H, Sq, Sk]);
// - elementwise ops take tensors of one shape: broadcasting is a stride-0 view made by the caller;
// - dst may alias src for elementwise ops (that is how in-place ops run);
// - each call is one piece of device work (one kernel or one memcpy), recorded by the backend
//   (a `cpu_kernel` range on the CPU; CUPTI records on the GPU).
#include <attnprof/attention.h>
#include <attnprof/tensor.h>

#include <optional>
#include <string>

namespace attnprof::ops {

class Backend {
 public:
  virtual ~Backend() = default;

  // dst[b,h] = alpha · a[b,h] · op(bm[b, h / (H/Hb)]), op = transpose when transpose_b.
  // a: [B,H,M,K]; bm: [B,Hb,K,N] (or [B,Hb,N,K] transposed); dst: [B,H,M,N]; fp32 accumulation.
  // allow_tensor_cores=false asks for the fp32 FFMA path (the math variant's GEMMs on the GPU).
  virtual void batched_gemm(Tensor& dst, const Tensor& a, const Tensor& bm, bool transpose_b, float alpha,
                            bool allow_tensor_cores) = 0;

  // dtype conversion allowed; on a device backend also host<->device when dst and src have one shape
  // and one dtype (make_inputs uses it to upload, the checks to download).
  virtual void copy(Tensor& dst, const Tensor& src) = 0;
  virtual void fill(Tensor& dst, double value) = 0;
  virtual void mul_scalar(Tensor& dst, const Tensor& src, double scalar) = 0;
  virtual void add(Tensor& dst, const Tensor& a, const Tensor& b) = 0;
  virtual void masked_fill(Tensor& dst, const Tensor& src, const Tensor& mask, double value) = 0;
  virtual void where(Tensor& dst, const Tensor& condition, const Tensor& if_true, const Tensor& if_false) = 0;
  virtual void logical_not(Tensor& dst, const Tensor& src) = 0;
  virtual void isneginf(Tensor& dst, const Tensor& src) = 0;
  // Keeps elements on or below (tril) / on or above (triu) `diagonal` of the last two dims, zeros the rest.
  virtual void tril(Tensor& dst, const Tensor& src, std::int64_t diagonal) = 0;
  virtual void triu(Tensor& dst, const Tensor& src, std::int64_t diagonal) = 0;

  // Row-wise over the last dim. A row of all -inf gives NaN (as PyTorch's softmax).
  virtual void softmax_lastdim(Tensor& dst, const Tensor& src) = 0;
  // dst[..., 0] = all(src[..., :]) for a bool src; dst has last dim 1.
  virtual void all_lastdim(Tensor& dst, const Tensor& src) = 0;
  // One pass: softmax(scale · src masked causally) — torch.compile's kernel. With causal, column j
  // of query row i is kept iff j <= i + causal_offset (0: top-left, Sk − Sq: bottom-right,
  // AttentionSpec::causal_offset()); a row that keeps no column comes out as zeros.
  virtual void scale_mask_softmax(Tensor& dst, const Tensor& src, double scale, bool causal,
                                  std::int64_t causal_offset = 0) = 0;

  // The softmax's backward over the last dim: dst = scale · probs ⊙ (grad − rowsum(grad ⊙ probs))
  // (scale 1: PyTorch's _softmax_backward_data; the scores' scale folded in: torch.compile's one
  // kernel). dst may alias grad. By default: throws UsageError (the device has no such kernel).
  virtual void softmax_backward(Tensor& dst, const Tensor& grad, const Tensor& probs, double scale);
  // dst [B,G,S,D] = the sums of src [B,H,S,D] over each group of H/G consecutive heads (GQA's
  // dK and dV). By default: throws UsageError (the device has no such kernel).
  virtual void sum_head_groups(Tensor& dst, const Tensor& src);

  // Single-kernel fused attention. out/q/k/v as in AttentionSpec; lse (optional, fp32 [B,H,Sq])
  // receives the natural-log log-sum-exp of each row. Fully masked rows give zeros.
  virtual void attention_efficient(const AttentionSpec& spec, Tensor& out, const Tensor& q, const Tensor& k,
                                   const Tensor& v, Tensor* lse) = 0;
  virtual void attention_flash(const AttentionSpec& spec, Tensor& out, const Tensor& q, const Tensor& k,
                               const Tensor& v, Tensor* lse) = 0;
  // The FlashAttention-style backward of those kernels (the GPU's flash on sm_90a: its wgmma kernel,
  // dq not bit-identical run to run): dq [B,H,Sq,D], dk and dv [B,Hkv,Sk,D] (the
  // spec's dtype, any strides; dk/dv summed over the query heads of each group) from q, k, v, the
  // forward's out and lse (fp32 [B,H,Sq], natural log) and dout [B,H,Sq,D]. Rows that saw no key
  // (lse −inf) contribute nothing and get dq = 0.
  virtual void attention_efficient_backward(const AttentionSpec& spec, Tensor& dq, Tensor& dk, Tensor& dv,
                                            const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                            const Tensor& lse, const Tensor& dout) = 0;
  virtual void attention_flash_backward(const AttentionSpec& spec, Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& q,
                                        const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                                        const Tensor& dout) = 0;
  // nullopt when this backend's fused kernels take the spec; otherwise why not.
  virtual std::optional<std::string> fused_refusal(const AttentionSpec& spec) const = 0;
  // Bytes the fused kernels allocate for one forward beyond inputs and output (the variants'
  // workspace_estimate). By default the fp32 log-sum-exp per query row a GPU kernel keeps.
  virtual std::int64_t fused_workspace_bytes(const AttentionSpec& spec, bool flash) const;
  static std::int64_t log_sum_exp_bytes(const AttentionSpec& spec);
  // Bytes the fused backward allocates beyond its inputs and gradients. By default what the CUDA
  // backend's FlashAttention-2 backward allocates: Δ = rowsum(dO ⊙ O), fp32 per query row (dQ is
  // written once per query block, never accumulated through an fp32 buffer).
  virtual std::int64_t fused_backward_workspace_bytes(const AttentionSpec& spec, bool flash) const;
  static std::int64_t flash_backward_default_bytes(const AttentionSpec& spec);

  // cuDNN's fused SDPA (the cudnn variant) on a device that has it; others throw UsageError.
  // prepare builds the plan for the spec outside the timed forward (cuDNN compiles its kernel then)
  // and returns one line describing the plan it built, nullopt when the plan came from the cache.
  virtual std::optional<std::string> cudnn_sdpa_prepare(const AttentionSpec& spec);
  virtual void cudnn_sdpa_forward(const AttentionSpec& spec, Tensor& out, const Tensor& q, const Tensor& k,
                                  const Tensor& v);
  // The cudnn variant's backward (src/cuda/cudnn_sdpa_backward.h). forward_with_stats: the forward
  // keeping its fp32 [B,H,Sq] Stats (natural-log log-sum-exp). backward_prepare: the plans that
  // forward and the backward need, built outside the timed region; one line describing what was
  // built, nullopt when both came from the cache. backward: cuDNN's fused backward from the Stats.
  // backward_workspace_bytes: what one backward allocates beyond its tensors and the Stats.
  virtual void cudnn_sdpa_forward_with_stats(const AttentionSpec& spec, Tensor& out, const Tensor& q, const Tensor& k,
                                             const Tensor& v, Tensor& stats);
  virtual std::optional<std::string> cudnn_sdpa_backward_prepare(const AttentionSpec& spec);
  virtual void cudnn_sdpa_backward(const AttentionSpec& spec, Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& q,
                                   const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& stats,
                                   const Tensor& dout);
  virtual std::int64_t cudnn_sdpa_backward_workspace_bytes(const AttentionSpec& spec) const;

  virtual void synchronize() = 0;
  // Hands the device back the memory the backend keeps cached for reuse (the CUDA pool), so that
  // another process on the same device can allocate it: compare does it before its later rounds'
  // processes start. Nothing on the CPU.
  virtual void release_cached_memory() {}
  // Bytes the device has free now (cudaMemGetInfo); the CPU backend answers nullopt (the
  // preflight reads MemAvailable itself).
  virtual std::optional<std::int64_t> free_bytes() const { return std::nullopt; }
  // The device's model ("NVIDIA H200"), which its cached ceilings are keyed by; "" where the
  // backend does not know it (the CPU's is read from /proc/cpuinfo by report/ceilings.cpp).
  virtual std::string model_name() const { return {}; }
  // A named range for the device's own tools (NVTX for Nsight on CUDA; nothing on the CPU).
  virtual void push_range(const char* name) { (void)name; }
  virtual void pop_range() {}
};

Backend& backend(Device device);  // throws UsageError when the device has no backend (no CUDA build / no GPU)
bool has_backend(Device device);
// Why `device` has no usable backend ("no NVIDIA driver (...)", "this build has no CUDA backend
// (...)"), or nullopt when it has one.
std::optional<std::string> unavailable_reason(Device device);
// The backends are assembled above this layer (src/run/backends.cpp installs the CPU one when
// libattnprof loads, src/run/cuda_module.cpp the CUDA provider): the op interface names no backend.
void install_backend(Device device, Backend* backend);
inline constexpr const char* kNoCpuBackendInstalled = "no CPU backend is installed (src/run/backends.cpp installs it)";

// A device whose backend is made on first need (the CUDA one lives in a module that
// src/run/cuda_module.cpp opens): backend() calls `get` once and keeps what it returns.
struct BackendProvider {
  Backend& (*get)() = nullptr;                            // throws UsageError saying why there is none
  std::optional<std::string> (*unavailable)() = nullptr;  // nullopt when get() would succeed
};
void install_backend_provider(Device device, BackendProvider provider);

}  // namespace attnprof::ops
