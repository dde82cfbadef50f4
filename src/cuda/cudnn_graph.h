#pragma once
// The pieces of cuDNN's backend graph API that the SDPA forward (cudnn_sdpa.cpp) and backward
// (cudnn_sdpa_backward.cpp) share: an owning descriptor, a builder of tensors and operations,
// the geometry of [B, H, S, D] tensors, and the choice of an engine config (heuristics mode A,
// the first kTimedConfigs plans that finalize timed, the fastest kept).
#include <attnprof/attention.h>
#include <attnprof/tensor.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cuda/check.h"
#include "cuda/cudnn_sdpa.h"

namespace attnprof::cuda::cudnn_graph {

class Desc {
 public:
  explicit Desc(cudnnBackendDescriptorType_t type) { ATTNPROF_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &d_)); }
  ~Desc() {
    if (d_) cudnnBackendDestroyDescriptor(d_);
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  cudnnBackendDescriptor_t get() const { return d_; }
  template <class T>
  void set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const T* values, std::int64_t count = 1) {
    ATTNPROF_CUDNN_CHECK(cudnnBackendSetAttribute(d_, name, type, count, values));
  }
  void set_desc(cudnnBackendAttributeName_t name, const Desc& other) {
    cudnnBackendDescriptor_t raw = other.get();
    set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, &raw);
  }
  void finalize() { ATTNPROF_CUDNN_CHECK(cudnnBackendFinalize(d_)); }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};
using DescPtr = std::shared_ptr<Desc>;

// CUDNN_DATA_BFLOAT16 / CUDNN_DATA_HALF; UsageError for another dtype.
cudnnDataType_t io_type(DType dtype);

using Dims = std::array<std::int64_t, 4>;

struct GraphBuilder {
  std::vector<DescPtr> keep;  // every descriptor the plan refers to stays alive with it

  // reordering: CUDNN_TENSOR_REORDERING_NONE leaves the attribute unset.
  DescPtr tensor(std::int64_t uid, Dims dims, Dims strides, cudnnDataType_t type, bool is_virtual = false,
                 bool by_value = false, std::int64_t alignment = 16,
                 cudnnBackendTensorReordering_t reordering = CUDNN_TENSOR_REORDERING_NONE);
  // axis >= 0 sets CUDNN_ATTR_POINTWISE_AXIS (GEN_INDEX); b and t may be null.
  DescPtr pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t precision, const DescPtr& x, const DescPtr& b,
                    const DescPtr& t, const DescPtr& y, std::int64_t axis = -1);
  DescPtr matmul(const DescPtr& a, const DescPtr& b, const DescPtr& c);  // fp32 compute
  DescPtr reduction(cudnnReduceTensorOp_t reduce, const DescPtr& x, const DescPtr& y);
  // y: x's elements under y's dims and strides (a transpose when the strides are swapped).
  DescPtr reshape(const DescPtr& x, const DescPtr& y);

  // The UIDs of the bottom-right shift's tensors: the by-value INT32 Sk and Sq a pack binds, and
  // the two virtual rows.
  struct ShiftUids {
    std::int64_t seq_kv, seq_q, row_plus_seq_kv, shifted_row;
  };
  // Appends to `ops` the causal keep-mask of `scores` ([B,H,Sq,Sk], dims and strides s) into the
  // BOOLEAN `mask`: GEN_INDEX of the row (axis 2) into `row` and of the column (axis 3) into
  // `col`, both INT32 in `index_precision`; for bottom-right (spec.causal_offset() != 0) the row
  // shifted as cuDNN's frontend does for causal_mask_bottom_right with fixed lengths, row + Sk
  // (ADD) − Sq (SUB) in INT32 math; then CMP_GE(row, col): column j of row i kept iff
  // j <= i + Sk − Sq.
  void causal_mask(std::vector<DescPtr>& ops, const AttentionSpec& spec, const DescPtr& scores, const DescPtr& row,
                   const DescPtr& col, const DescPtr& mask, const Dims& s_dims, const Dims& s_strides,
                   const ShiftUids& uids, cudnnDataType_t index_precision);
};

// What the descriptors bake in about one tensor: its [B, H, S, D] dims and strides.
struct Geometry {
  Dims dims, strides;
};
Geometry geometry_of(const Tensor& t);
// A tensor as make_inputs/make_output lay it out (contiguous bhsd, or bshd through strides).
Geometry geometry_of(std::int64_t b, std::int64_t h, std::int64_t s, std::int64_t d, Layout layout);
// Elements a tensor of these dims and strides spans from its first element.
std::int64_t span_elements(const Geometry& g);
// Dims and strides with the last two swapped (Kᵀ from K).
Geometry transposed(const Geometry& g);

// cuDNN takes bottom-right alignment only with Sq <= Sk (its frontend refuses Sq > Sk: "Please
// virtually slice the Q tensor and pass it as s_q == s_kv"). So for Sq > Sk the first Sq − Sk
// query rows, which see no key, are handled apart (forward: zeros, LSE −inf; backward: dQ zeros,
// no share in dK, dV) and cuDNN runs the last Sk rows, a square problem whose bottom-right
// diagonal is the top-left one. blind_rows: Sq − Sk there, else 0; solvable_spec: that problem.
std::int64_t blind_rows(const AttentionSpec& spec);
AttentionSpec solvable_spec(const AttentionSpec& spec);
// Rows [first, first + rows) of a [B, H, S, D] view (q, out, dout, dq), same strides.
Tensor rows_of(const Tensor& t, std::int64_t first, std::int64_t rows);
// 16 when p is 16-byte aligned, else 4 (an fp32 row start).
std::int64_t alignment_of(const void* p);

// cudnnGetLastErrorString on one line ("no reason given" when empty).
std::string last_cudnn_error();
std::int64_t get_int64(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name);

// KernelOverrides::cudnn_engine n (--cudnn-engine): build the n-th engine config of heuristics mode A
// instead of timing the first that finalize. -1: automatic.
int configured_engine_config();

// One finalized engine config, and its time on scratch tensors when there was a choice.
struct Candidate {
  std::int64_t index = -1;
  std::unique_ptr<Desc> plan;
  std::int64_t workspace_bytes = 0;
  CudnnPlanInfo info;  // engine id and kernel cfg
  double median_us = 0.0;
  std::string failure;  // cuDNN's reason when it finalized but would not execute (then not kept)
};
constexpr int kTimedConfigs = 3;
constexpr int kTimedRuns = 5;

// The largest workspace of the candidates, at least 256 bytes (the kernels memset a tile counter there).
std::int64_t largest_workspace(const std::vector<Candidate>& candidates);
// Runs each candidate once on `pack` (through `handle`, on `stream`) to warm up, then kTimedRuns
// times between CUDA events, and records the median in µs; `before_each` (when set) is enqueued
// before every execution, outside the timed events. A config that finalized but does not execute
// is left with its failure (cuDNN's reason).
void time_candidates(std::vector<Candidate>& candidates, cudnnHandle_t handle, cudaStream_t stream,
                     cudnnBackendDescriptor_t pack, const std::function<void()>& before_each = {});

// An operation graph finalized on a handle, the engine configs heuristics mode A offered for it
// and the execution plan chosen among them.
struct EnginePlan {
  std::unique_ptr<Desc> operation_graph;
  std::vector<cudnnBackendDescriptor_t> configs;  // heuristic results (owned; destroyed below)
  std::unique_ptr<Desc> plan;
  CudnnPlanInfo info;
  EnginePlan() = default;
  EnginePlan(const EnginePlan&) = delete;
  EnginePlan& operator=(const EnginePlan&) = delete;
  ~EnginePlan();
};

// The plan under `key`: found (info.cache_hit, build_ms 0), or made by build(plan) and kept, with
// info.build_ms its wall time. PlanT derives from EnginePlan.
template <class Key, class PlanT, class Build>
PlanT& cached_plan(std::map<Key, std::unique_ptr<PlanT>>& plans, const Key& key, Build&& build) {
  auto found = plans.find(key);
  if (found != plans.end()) {
    found->second->info.cache_hit = true;
    found->second->info.build_ms = 0.0;
    return *found->second;
  }
  const auto start = std::chrono::steady_clock::now();
  auto plan = std::make_unique<PlanT>();
  build(plan);
  plan->info.build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  plan->info.cache_hit = false;
  return *plans.emplace(key, std::move(plan)).first->second;
}

// Finalizes `ops` into p.operation_graph, asks heuristics mode A for engine configs and finalizes
// the first kTimedConfigs plans that build (or KernelOverrides::cudnn_engine's alone); with more
// than one, `time` runs them (time_candidates) and the fastest that executes is kept in p.plan,
// its engine, kernel cfg, workspace and the times in p.info. `what` names the graph in errors
// ("the SDPA graph", "the SDPA backward graph"). Throws UsageError with cuDNN's reason when no
// engine takes the problem.
void choose_engine(EnginePlan& p, cudnnHandle_t handle, const std::vector<DescPtr>& ops, const AttentionSpec& spec,
                   const char* what, const std::function<void(std::vector<Candidate>&)>& time);

}  // namespace attnprof::cuda::cudnn_graph
