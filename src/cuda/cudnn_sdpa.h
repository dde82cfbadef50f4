#pragma once
// cuDNN's fused SDPA forward through the backend graph API (the frontend library is not
// available), built exactly as ../shared/research/cudnn-sdpa.md records PyTorch 2.11's calls on
// cuDNN 9.19: the 14-operation composite graph for causal, the single SDPA_FWD operation for
// non-causal. Plans are cached per everything baked into the descriptors; the scale is passed by
// value so it stays out of the key. Plan build time is reported apart from per-call time.
#include <attnprof/attention.h>
#include <attnprof/tensor.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace attnprof::cuda {

struct CudnnPlanInfo {
  double build_ms = 0.0;     // 0 when the plan came from the cache
  bool cache_hit = false;
  std::int64_t engine_id = -1;
  std::int64_t kernel_cfg = -1;  // CUDNN_KNOB_TYPE_KERNEL_CFG of the chosen config
  // The engine's CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC: 1 when it carries the note (results may
  // differ from run to run), 0 when it does not, -1 when cuDNN did not say.
  int nondeterministic = -1;
  std::int64_t workspace_bytes = 0;
  std::int64_t config_index = -1;     // position of the built config among heuristics mode A's
  std::int64_t configs_offered = 0;
  std::string timed;  // "cfg 32 64.0 µs, cfg 7 60.1 µs": the candidates timed at build, when there was a choice
  std::string graph;  // "composite causal (14 ops)" or "unified SDPA_FWD"
};

// Builds (or finds) the plan for these tensors. Throws UsageError with cuDNN's reason
// (cudnnGetLastErrorString) in one line when no engine takes the problem.
CudnnPlanInfo cudnn_sdpa_prepare(const AttentionSpec& spec, const Tensor& out, const Tensor& q, const Tensor& k,
                                 const Tensor& v, bool with_lse);
// The same for tensors laid out as make_inputs/make_output make them (spec.layout), before any exist.
CudnnPlanInfo cudnn_sdpa_prepare(const AttentionSpec& spec, bool with_lse);
// One forward (prepares on a cache miss). lse: optional fp32 [B,H,Sq].
CudnnPlanInfo cudnn_sdpa_forward(const AttentionSpec& spec, Tensor& out, const Tensor& q, const Tensor& k,
                                 const Tensor& v, Tensor* lse, cudaStream_t stream);
// cuDNN's version as a number (91900 for 9.19.0).
std::int64_t cudnn_version();

}  // namespace attnprof::cuda
