#include "cuda/cudnn_sdpa.h"

#include <attnprof/error.h>
#include <attnprof/memory.h>
#include <cudnn.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "cuda/check.h"
#include "cuda/cuda_backend.h"
#include "cuda/cudnn_graph.h"
#include "cuda/kernels.h"
#include "cuda/problem_text.h"

namespace attnprof::cuda {
namespace {

using namespace cudnn_graph;

// PyTorch's tensor UIDs (MHA.cpp), kept so logs diff cleanly against observed_*.json.
// 19..22 (bottom-right only) are ours: PyTorch 2.11 builds no such graph.
enum Uid : std::int64_t {
  kQ = 0, kK = 1, kV = 2, kO = 3, kS = 4, kScale = 5, kScaled = 6, kRow = 7, kCol = 8, kMask = 9, kNegInf = 10,
  kMasked = 11, kStats = 12, kP = 13, kMax = 14, kSubMax = 15, kExp = 16, kSum = 17, kLogSum = 18,
  kSeqKv = 19, kRowPlusSeqKv = 20, kSeqQ = 21, kShiftedRow = 22,
};

struct ProblemGeometry {
  Geometry q, k, v, o;
  std::int64_t stats_seq_stride = 0;  // the LSE's row stride: spec.seq_q, or the full Sq of a sliced Q
  // The LSE rows of a sliced Q start Sq − Sk floats in: 16-byte aligned only when that is a multiple of 4.
  std::int64_t stats_alignment = 16;
};

// The causal composite graph of research/cudnn-sdpa.md §1 (14 ops, 19 tensors). Bottom-right with
// Sq < Sk adds two ops before the CMP_GE, exactly as cuDNN's frontend shifts its diagonal for
// causal_mask_bottom_right with fixed lengths: row + Sk (ADD) − Sq (SUB), by-value INT32 scalars in
// INT32 math, so the mask keeps col <= row + Sk − Sq (16 ops, 23 tensors).
std::vector<DescPtr> causal_graph(GraphBuilder& g, const AttentionSpec& spec, const ProblemGeometry& p, bool with_lse) {
  const cudnnDataType_t io = io_type(spec.dtype);
  const std::int64_t b = spec.batch, h = spec.heads, sq = spec.seq_q, skv = spec.seq_k;
  const Dims s_dims{b, h, sq, skv}, s_strides{h * sq * skv, sq * skv, skv, 1};
  const Dims row_dims{b, h, sq, 1}, row_strides{h * sq, sq, 1, 1};
  const std::int64_t stats_stride = p.stats_seq_stride > 0 ? p.stats_seq_stride : sq;
  const Dims stats_strides{h * stats_stride, stats_stride, 1, 1};
  const Dims one{1, 1, 1, 1};
  auto tq = g.tensor(kQ, p.q.dims, p.q.strides, io);
  // Kᵀ: K's dims and strides with the last two swapped.
  const Dims& kd = p.k.dims;
  const Dims& ks = p.k.strides;
  auto tk = g.tensor(kK, {kd[0], kd[1], kd[3], kd[2]}, {ks[0], ks[1], ks[3], ks[2]}, io);
  auto tv = g.tensor(kV, p.v.dims, p.v.strides, io);
  auto to = g.tensor(kO, p.o.dims, p.o.strides, io);
  auto t_scale = g.tensor(kScale, one, one, CUDNN_DATA_FLOAT, false, true);
  auto t_neg_inf = g.tensor(kNegInf, one, one, CUDNN_DATA_FLOAT, false, true);
  auto ts = g.tensor(kS, s_dims, s_strides, CUDNN_DATA_FLOAT, true);
  auto t_scaled = g.tensor(kScaled, s_dims, s_strides, CUDNN_DATA_FLOAT, true);
  auto t_row = g.tensor(kRow, s_dims, s_strides, CUDNN_DATA_INT32, true);
  auto t_col = g.tensor(kCol, s_dims, s_strides, CUDNN_DATA_INT32, true);
  auto t_mask = g.tensor(kMask, s_dims, s_strides, CUDNN_DATA_BOOLEAN, true);
  auto t_masked = g.tensor(kMasked, s_dims, s_strides, CUDNN_DATA_FLOAT, true);
  auto t_max = g.tensor(kMax, row_dims, row_strides, CUDNN_DATA_FLOAT, true);
  auto t_sub = g.tensor(kSubMax, s_dims, s_strides, CUDNN_DATA_FLOAT, true);
  auto t_exp = g.tensor(kExp, s_dims, s_strides, CUDNN_DATA_FLOAT, true);
  auto t_sum = g.tensor(kSum, row_dims, row_strides, CUDNN_DATA_FLOAT, true);
  auto t_log = g.tensor(kLogSum, row_dims, row_strides, CUDNN_DATA_FLOAT, true);
  auto t_stats = with_lse ? g.tensor(kStats, row_dims, stats_strides, CUDNN_DATA_FLOAT, false, false, p.stats_alignment)
                          : g.tensor(kStats, row_dims, row_strides, CUDNN_DATA_FLOAT, true);
  auto t_p = g.tensor(kP, s_dims, s_strides, io, true);
  std::vector<DescPtr> ops;
  ops.push_back(g.matmul(tq, tk, ts));
  ops.push_back(g.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, ts, t_scale, nullptr, t_scaled));
  g.causal_mask(ops, spec, t_scaled, t_row, t_col, t_mask, s_dims, s_strides, {kSeqKv, kSeqQ, kRowPlusSeqKv, kShiftedRow},
                CUDNN_DATA_FLOAT);
  ops.push_back(g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, t_scaled, t_neg_inf, t_mask, t_masked));
  ops.push_back(g.reduction(CUDNN_REDUCE_TENSOR_MAX, t_masked, t_max));
  ops.push_back(g.pointwise(CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, t_masked, t_max, nullptr, t_sub));
  ops.push_back(g.pointwise(CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, t_sub, nullptr, nullptr, t_exp));
  ops.push_back(g.reduction(CUDNN_REDUCE_TENSOR_ADD, t_exp, t_sum));
  ops.push_back(g.pointwise(CUDNN_POINTWISE_LOG, CUDNN_DATA_FLOAT, t_sum, nullptr, nullptr, t_log));
  ops.push_back(g.pointwise(CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, t_max, t_log, nullptr, t_stats));
  ops.push_back(g.pointwise(CUDNN_POINTWISE_DIV, CUDNN_DATA_FLOAT, t_exp, t_sum, nullptr, t_p));
  ops.push_back(g.matmul(t_p, tv, to));
  return ops;
}

// Non-causal: the single SDPA_FWD operation (K not transposed), as PyTorch 2.11 auto-selects.
std::vector<DescPtr> unified_graph(GraphBuilder& g, const AttentionSpec& spec, const ProblemGeometry& p, bool with_lse) {
  const cudnnDataType_t io = io_type(spec.dtype);
  const Dims one{1, 1, 1, 1};
  auto tq = g.tensor(kQ, p.q.dims, p.q.strides, io);
  auto tk = g.tensor(kK, p.k.dims, p.k.strides, io);
  auto tv = g.tensor(kV, p.v.dims, p.v.strides, io);
  auto to = g.tensor(kO, p.o.dims, p.o.strides, io);
  auto t_scale = g.tensor(kScale, one, one, CUDNN_DATA_FLOAT, false, true);
  auto op = std::make_shared<Desc>(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR);
  op->set_desc(CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, *tq);
  op->set_desc(CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, *tk);
  op->set_desc(CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, *tv);
  op->set_desc(CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, *to);
  op->set_desc(CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, *t_scale);
  if (with_lse) {
    const std::int64_t b = spec.batch, h = spec.heads, sq = spec.seq_q;
    const std::int64_t stride = p.stats_seq_stride > 0 ? p.stats_seq_stride : sq;
    auto t_stats = g.tensor(kStats, {b, h, sq, 1}, {h * stride, stride, 1, 1}, CUDNN_DATA_FLOAT, false, false,
                            p.stats_alignment);
    op->set_desc(CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, *t_stats);
  }
  op->finalize();
  g.keep.push_back(op);
  return {op};
}

// dtype, B, H, Hkv, Sq, Sk, D, the four strides, causal, the causal offset (the bottom-right shift
// is in the graph and its lengths in the pack), the LSE flag, row stride and alignment, the device.
using PlanKey = std::tuple<int, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                           Dims, Dims, Dims, Dims, bool, std::int64_t, bool, std::int64_t, std::int64_t, int, int>;

struct Plan : EnginePlan {
  GraphBuilder graph;
  void* workspace = nullptr;
  std::size_t workspace_alloc = 0;
  // The by-value softmax scale: every variant pack holds &scale, read at execute time. NaN until
  // build sets it, so a pack made before that shows as NaN outputs rather than a plausible 1.0.
  float scale = std::numeric_limits<float>::quiet_NaN();
  std::array<std::int32_t, 2> seq_lengths{};  // the by-value kSeqKv and kSeqQ of a bottom-right graph
  // Variant packs for the last few pointer sets (repeated forwards reuse them: no per-call descriptors).
  struct Pack {
    std::array<const void*, 5> pointers;
    std::unique_ptr<Desc> desc;
  };
  std::list<Pack> packs;
  ~Plan() {
    if (workspace) memory::release(Device::cuda, workspace, workspace_alloc);
  }
};

// A variant pack: the tensors' device pointers (Q, K, V, O, LSE) and the by-value scalars, which
// cuDNN reads through host pointers at execute time.
std::unique_ptr<Desc> make_pack(const std::array<const void*, 5>& pointers, void* workspace, const float* scale,
                                const float* neg_inf, bool with_lse, bool causal,
                                const std::array<std::int32_t, 2>* seq_lengths) {
  std::vector<std::int64_t> uids{kQ, kK, kV, kO, kScale};
  std::vector<void*> data{const_cast<void*>(pointers[0]), const_cast<void*>(pointers[1]),
                          const_cast<void*>(pointers[2]), const_cast<void*>(pointers[3]), const_cast<float*>(scale)};
  if (causal) {
    uids.push_back(kNegInf);
    data.push_back(const_cast<float*>(neg_inf));
  }
  if (seq_lengths != nullptr) {  // host pointers to by-value INT32 scalars
    uids.push_back(kSeqKv);
    data.push_back(const_cast<std::int32_t*>(&(*seq_lengths)[0]));
    uids.push_back(kSeqQ);
    data.push_back(const_cast<std::int32_t*>(&(*seq_lengths)[1]));
  }
  if (with_lse) {
    uids.push_back(kStats);
    data.push_back(const_cast<void*>(pointers[4]));
  }
  auto desc = std::make_unique<Desc>(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  desc->set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids.data(), static_cast<std::int64_t>(uids.size()));
  desc->set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, data.data(), static_cast<std::int64_t>(data.size()));
  desc->set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &workspace);
  desc->finalize();
  return desc;
}

const float kNegInfValue = -std::numeric_limits<float>::infinity();

// Times the candidates (cudnn_graph::time_candidates) on zeroed scratch tensors of the plan's
// geometry: attention's time does not depend on the values.
void time_forward_candidates(std::vector<Candidate>& candidates, cudnnHandle_t handle, const AttentionSpec& spec,
                             const ProblemGeometry& geometry, bool with_lse, const float& scale,
                             const std::array<std::int32_t, 2>& seq_lengths) {
  // Device tensors own the scratch (the stream-ordered allocator frees it after the runs).
  const Tensor q = Tensor::empty({span_elements(geometry.q)}, spec.dtype, Device::cuda);
  const Tensor k = Tensor::empty({span_elements(geometry.k)}, spec.dtype, Device::cuda);
  const Tensor v = Tensor::empty({span_elements(geometry.v)}, spec.dtype, Device::cuda);
  const Tensor o = Tensor::empty({span_elements(geometry.o)}, spec.dtype, Device::cuda);
  const Tensor stats =
      Tensor::empty({with_lse ? spec.batch * spec.heads * geometry.stats_seq_stride : 1}, DType::fp32, Device::cuda);
  const Tensor workspace = Tensor::empty({(largest_workspace(candidates) + 3) / 4}, DType::fp32, Device::cuda);
  cudaStream_t stream = backend_stream();
  for (const Tensor* t : {&q, &k, &v, &o, &stats})
    ATTNPROF_CUDA_CHECK(cudaMemsetAsync(t->raw(), 0, static_cast<std::size_t>(t->numel()) * dtype_size(t->dtype()), stream));
  const std::array<const void*, 5> pointers{q.raw(), k.raw(), v.raw(), o.raw(), with_lse ? stats.raw() : nullptr};
  const auto pack = make_pack(pointers, workspace.raw(), &scale, &kNegInfValue, with_lse, spec.causal,
                              spec.causal_offset() != 0 ? &seq_lengths : nullptr);
  time_candidates(candidates, handle, stream, pack->get());
}

class SdpaCache {
 public:
  SdpaCache() { ATTNPROF_CUDNN_CHECK(cudnnCreate(&handle_)); }
  // Process lifetime (no destructor work after the driver unloads).

  Plan& plan(const AttentionSpec& spec, const ProblemGeometry& geometry, bool with_lse) {
    int device = 0;
    ATTNPROF_CUDA_CHECK(cudaGetDevice(&device));
    PlanKey key{static_cast<int>(spec.dtype), spec.batch,         spec.heads,         spec.kv_heads,
                spec.seq_q,                   spec.seq_k,         spec.head_dim,      geometry.q.strides,
                geometry.k.strides,           geometry.v.strides, geometry.o.strides, spec.causal,
                spec.causal_offset(),         with_lse,           with_lse ? geometry.stats_seq_stride : 0,
                with_lse ? geometry.stats_alignment : 0,          device,
                configured_engine_config()};
    return cached_plan(plans_, key, [&](std::unique_ptr<Plan>& plan) { build(*plan, spec, geometry, with_lse); });
  }

  cudnnHandle_t handle() const { return handle_; }
  std::mutex& mutex() { return mutex_; }

 private:
  void build(Plan& p, const AttentionSpec& spec, const ProblemGeometry& geometry, bool with_lse) {
    std::vector<DescPtr> ops = spec.causal ? causal_graph(p.graph, spec, geometry, with_lse)
                                           : unified_graph(p.graph, spec, geometry, with_lse);
    p.info.graph = !spec.causal                 ? "unified SDPA_FWD operation"
                   : spec.causal_offset() == 0 ? "composite causal graph (14 ops)"
                                               : "composite causal graph, bottom-right (16 ops)";
    p.seq_lengths = {static_cast<std::int32_t>(spec.seq_k), static_cast<std::int32_t>(spec.seq_q)};
    p.scale = static_cast<float>(softmax_scale_of(spec));  // head_dim fixes it, and head_dim is in the key
    choose_engine(p, handle_, ops, spec, "the SDPA graph", [&](std::vector<Candidate>& candidates) {
      time_forward_candidates(candidates, handle_, spec, geometry, with_lse, p.scale, p.seq_lengths);
    });
    // The kernel uses its workspace (a tile counter it memsets): never pass NULL.
    p.workspace_alloc = static_cast<std::size_t>(std::max<std::int64_t>(p.info.workspace_bytes, 256));
    p.workspace = memory::allocate(Device::cuda, p.workspace_alloc);
  }

  cudnnHandle_t handle_ = nullptr;
  std::mutex mutex_;  // plans are not guaranteed thread-safe ([PT]): one caller at a time
  std::map<PlanKey, std::unique_ptr<Plan>> plans_;
};

SdpaCache& cache() {
  static SdpaCache* instance = new SdpaCache();
  return *instance;
}

constexpr std::size_t kPacksPerPlan = 8;

cudnnBackendDescriptor_t variant_pack(Plan& p, const std::array<const void*, 5>& pointers, bool with_lse, bool causal,
                                      const std::array<std::int32_t, 2>* seq_lengths) {
  for (auto it = p.packs.begin(); it != p.packs.end(); ++it) {
    if (it->pointers == pointers) {
      p.packs.splice(p.packs.begin(), p.packs, it);  // most recent first
      return p.packs.front().desc->get();
    }
  }
  p.packs.push_front(
      Plan::Pack{pointers, make_pack(pointers, p.workspace, &p.scale, &kNegInfValue, with_lse, causal, seq_lengths)});
  if (p.packs.size() > kPacksPerPlan) p.packs.pop_back();
  return p.packs.front().desc->get();
}

void check_tensors(const AttentionSpec& spec, const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v) {
  if (spec.head_dim % 8 != 0 || spec.head_dim > 256)
    throw UsageError(fmt::format("head_dim {}: cudnn takes multiples of 8 up to 256", spec.head_dim));
  for (const Tensor* t : {&out, &q, &k, &v})
    if (t->rank() != 4 || t->stride(3) != 1 || t->device() != Device::cuda)
      throw Error(fmt::format("cudnn: {} must be a rank-4 CUDA tensor with unit stride in the head dim", t->describe()));
}

}  // namespace

std::int64_t cudnn_version() { return static_cast<std::int64_t>(cudnnGetVersion()); }

namespace {
// The problem cuDNN runs: Q and O minus their blind rows, the LSE rows keeping the full row stride.
// lse_rows: where its LSE rows start (null: an allocation's start plus the blind rows).
ProblemGeometry solvable_geometry(const AttentionSpec& spec, const Tensor& out, const Tensor& q, const Tensor& k,
                                  const Tensor& v, const void* lse_rows) {
  const std::int64_t blind = blind_rows(spec);
  return {geometry_of(rows_of(q, blind, spec.seq_q - blind)), geometry_of(k), geometry_of(v),
          geometry_of(rows_of(out, blind, spec.seq_q - blind)), spec.seq_q,
          lse_rows != nullptr ? alignment_of(lse_rows) : (blind % 4 == 0 ? 16 : 4)};
}
}  // namespace

CudnnPlanInfo cudnn_sdpa_prepare(const AttentionSpec& spec, const Tensor& out, const Tensor& q, const Tensor& k,
                                 const Tensor& v, bool with_lse) {
  check_tensors(spec, out, q, k, v);
  std::lock_guard lock(cache().mutex());
  return cache().plan(solvable_spec(spec), solvable_geometry(spec, out, q, k, v, nullptr), with_lse).info;
}

CudnnPlanInfo cudnn_sdpa_prepare(const AttentionSpec& spec, bool with_lse) {
  if (spec.head_dim % 8 != 0 || spec.head_dim > 256)
    throw UsageError(fmt::format("head_dim {}: cudnn takes multiples of 8 up to 256", spec.head_dim));
  // A sliced Q or O keeps the full tensor's strides (the rows are a view), so the geometry is
  // the one of tensors of spec.seq_q rows with the solvable problem's dims.
  const AttentionSpec solvable = solvable_spec(spec);
  auto sliced = [&](std::int64_t heads) {
    Geometry g = geometry_of(spec.batch, heads, spec.seq_q, spec.head_dim, spec.layout);
    g.dims[2] = solvable.seq_q;
    return g;
  };
  const ProblemGeometry geometry{sliced(spec.heads),
                                 geometry_of(spec.batch, spec.kv_heads, spec.seq_k, spec.head_dim, spec.layout),
                                 geometry_of(spec.batch, spec.kv_heads, spec.seq_k, spec.head_dim, spec.layout),
                                 sliced(spec.heads), spec.seq_q, blind_rows(spec) % 4 == 0 ? 16 : 4};
  std::lock_guard lock(cache().mutex());
  return cache().plan(solvable, geometry, with_lse).info;
}

CudnnPlanInfo cudnn_sdpa_forward(const AttentionSpec& spec, Tensor& out, const Tensor& q, const Tensor& k,
                                 const Tensor& v, Tensor* lse, cudaStream_t stream) {
  check_tensors(spec, out, q, k, v);
  if (lse != nullptr && (lse->dtype() != DType::fp32 || !lse->is_contiguous()))
    throw Error("cudnn: lse must be a contiguous fp32 [B, H, Sq] tensor");
  const std::int64_t blind = blind_rows(spec);
  const AttentionSpec solvable = solvable_spec(spec);
  if (blind > 0) {  // rows that see no key: zeros, LSE −inf (one fill kernel each)
    launch_fill(make_arg(rows_of(out, 0, blind)), 0.0, stream);
    if (lse != nullptr) {
      const Tensor lse_rows = lse->view_strided({spec.batch, spec.heads, blind}, {spec.heads * spec.seq_q, spec.seq_q, 1});
      launch_fill(make_arg(lse_rows), -std::numeric_limits<double>::infinity(), stream);
    }
  }
  const Tensor q_rows = rows_of(q, blind, solvable.seq_q);
  Tensor out_rows = rows_of(out, blind, solvable.seq_q);
  SdpaCache& c = cache();
  std::lock_guard lock(c.mutex());
  const void* lse_rows = lse ? static_cast<const float*>(lse->raw()) + blind : nullptr;
  Plan& plan = c.plan(solvable, solvable_geometry(spec, out, q, k, v, lse_rows), lse != nullptr);
  std::array<const void*, 5> pointers{q_rows.raw(), k.raw(), v.raw(), out_rows.raw(), lse_rows};
  cudnnBackendDescriptor_t pack = variant_pack(plan, pointers, lse != nullptr, solvable.causal,
                                               solvable.causal_offset() != 0 ? &plan.seq_lengths : nullptr);
  ATTNPROF_CUDNN_CHECK(cudnnSetStream(c.handle(), stream));
  cudnnStatus_t status = cudnnBackendExecute(c.handle(), plan.plan->get(), pack);
  if (status != CUDNN_STATUS_SUCCESS)
    throw Error(fmt::format("cudnnBackendExecute failed for {}: {}: {}", problem_text(spec), cudnnGetErrorString(status),
                            last_cudnn_error()));
  return plan.info;
}

}  // namespace attnprof::cuda
