#pragma once
// cuDNN's fused SDPA backward through the backend graph API, from Q, K, V, O, dO and the forward's
// fp32 Stats (natural-log LSE) to dQ, dK, dV: non-causal, the single SDPA_BWD operation (as
// cuDNN's frontend auto-selects; the composite graph where no engine takes it); causal, the
// composite graph cuDNN's frontend builds for its SDPA backward node (cuDNN 9.19's SDPA_BWD
// operation has no causal mask). Plans are cached per everything baked into the descriptors, as
// the forward's (cudnn_sdpa.h); engine configs are timed at build. dQ accumulates in fp32 with
// atomics (as PyTorch runs it by default), so the backward is not bit-deterministic run to run.
#include <attnprof/attention.h>
#include <attnprof/tensor.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/cudnn_sdpa.h"

namespace attnprof::cuda {

// Builds (or finds) the backward plan for tensors laid out as make_inputs/make_output/make_grads
// make them (spec.layout) and an LSE of spec.seq_q rows. Throws UsageError with cuDNN's reason in
// one line when no engine takes the problem.
CudnnPlanInfo cudnn_sdpa_backward_prepare(const AttentionSpec& spec);
// One backward (prepares on a cache miss): dq [B,H,Sq,D], dk and dv [B,Hkv,Sk,D] (spec's dtype,
// unit stride in D) from q, k, v, out and dout and lse (contiguous fp32 [B,H,Sq], what
// cudnn_sdpa_forward wrote). Query rows that see no key (bottom-right, Sq > Sk) get dq = 0.
CudnnPlanInfo cudnn_sdpa_backward(const AttentionSpec& spec, Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& q,
                                  const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                                  const Tensor& dout, cudaStream_t stream);
// Bytes one backward allocates beyond its tensors and the LSE: the plan's workspace (cuDNN's
// reported size, plus for the composite graph the fp32 dQ accumulator, B·H·Sq·D·4) when the plan
// for spec.layout is built; before that an estimate: the accumulator plus fp32 row sums Δ (B·H·Sq·4).
std::int64_t cudnn_sdpa_backward_workspace_bytes(const AttentionSpec& spec);

}  // namespace attnprof::cuda
