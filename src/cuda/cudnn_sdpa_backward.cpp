#include "cuda/cudnn_sdpa_backward.h"

#include <attnprof/error.h>
#include <attnprof/memory.h>
#include <cudnn.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <initializer_list>
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

// The backward graph's tensor UIDs: the eleven a variant pack binds, the by-value scalars, then
// the virtual ones.
enum Uid : std::int64_t {
  kQ = 1, kKt = 2, kVt = 3, kO = 4, kDO = 5, kStats = 6, kDQ = 7, kDK = 8, kDV = 9, kDQAccum = 10,
  kSoftmaxSum = 16, kScale = 11, kOne = 12, kNegInf = 13, kSeqKv = 14, kSeqQ = 15,
  kDOO = 20, kRowDot = 21, kS = 23, kScaled = 24, kRow = 25, kCol = 26, kRowPlusSeqKv = 27,
  kShiftedRow = 28, kMask = 29, kMasked = 30, kSubStats = 31, kP = 32, kPt = 33, kDVFull = 34, kDP = 35,
  kDPSub = 37, kDS0 = 38, kDS = 39, kDSt = 40, kDKFull = 41, kK = 42,
  kKey = 50, kValue = 51,  // K and V of the SDPA_BWD operation (not transposed)
};

struct BackwardGeometry {
  Geometry q, k, v, o, dout, dq, dk, dv;
  std::int64_t stats_seq_stride = 0;  // the LSE's row stride: the full Sq of a sliced Q
  std::int64_t stats_alignment = 16;
};

Dims contiguous(const Dims& d) { return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1}; }

// The graph of cuDNN's frontend (1.18, as PyTorch 2.11 builds it) SDPA backward node, no dropout,
// bias or padding, op for op with its tensor types, in the order cuDNN's backend log lists
// PyTorch's graph:
//   Δ = rowsum(dO ⊙ O)·1 (a non-virtual fp32 [B,H,Sq,1] in the workspace);  S = scale·Q·Kᵀ;
//   P = exp(mask(S − Stats)), causally masked to −inf (fp32 index math);  dV = Pᵀ·dO;
//   dS = scale·P ⊙ (dO·Vᵀ − Δ);  dQ = dS·K (K as an fp32 virtual), accumulated in fp32 (the
//   non-virtual row-major dQ accumulator) and copied to dQ (IDENTITY);  dK = dSᵀ·Q.
// GQA/MQA: dV and dK come out per query head and are summed over each group (REDUCTION ADD into
// [B,Hkv,Sk,D]). Bottom-right with Sq < Sk shifts the row index by Sk − Sq (by-value INT32 ADD
// and SUB), as the forward's graph.
std::vector<DescPtr> backward_graph(GraphBuilder& g, const AttentionSpec& spec, const BackwardGeometry& p) {
  const cudnnDataType_t io = io_type(spec.dtype);
  const std::int64_t b = spec.batch, h = spec.heads, sq = spec.seq_q, skv = spec.seq_k, d = spec.head_dim;
  const bool grouped = spec.kv_heads != spec.heads;
  const Dims s_dims{b, h, sq, skv}, s_strides{h * sq * skv, sq * skv, skv, 1};
  const Dims st_dims{b, h, skv, sq}, st_strides{h * sq * skv, sq * skv, 1, skv};  // Sᵀ over S's memory
  const Dims row_dims{b, h, sq, 1}, row_strides{h * sq, sq, 1, 1};
  const Dims q_full{b, h, sq, d}, kv_full{b, h, skv, d};
  const Dims one{1, 1, 1, 1};
  const Geometry kt = transposed(p.k), vt = transposed(p.v);
  auto tq = g.tensor(kQ, p.q.dims, p.q.strides, io);
  auto tkt = g.tensor(kKt, kt.dims, kt.strides, io);
  auto tvt = g.tensor(kVt, vt.dims, vt.strides, io);
  auto to = g.tensor(kO, p.o.dims, p.o.strides, io);
  auto tdo = g.tensor(kDO, p.dout.dims, p.dout.strides, io);
  const std::int64_t stride = p.stats_seq_stride;
  auto t_stats = g.tensor(kStats, row_dims, {h * stride, stride, 1, 1}, CUDNN_DATA_FLOAT, false, false,
                          p.stats_alignment);
  auto tdq = g.tensor(kDQ, p.dq.dims, p.dq.strides, io);
  auto tdk = g.tensor(kDK, p.dk.dims, p.dk.strides, io);
  auto tdv = g.tensor(kDV, p.dv.dims, p.dv.strides, io);
  auto t_accum = g.tensor(kDQAccum, q_full, contiguous(q_full), CUDNN_DATA_FLOAT);
  auto t_scale = g.tensor(kScale, one, one, CUDNN_DATA_FLOAT, false, true);
  auto t_one = g.tensor(kOne, one, one, CUDNN_DATA_FLOAT, false, true);
  auto fp32 = [&](std::int64_t uid, const Dims& dims, const Dims& strides) {
    return g.tensor(uid, dims, strides, CUDNN_DATA_FLOAT, true);
  };
  std::vector<DescPtr> ops;
  // grad = a·b, per query head; under GQA through a virtual [B,H,Sk,D] summed over each group.
  auto kv_grad = [&](const DescPtr& a, const DescPtr& b, const DescPtr& grad, std::int64_t full_uid) {
    if (!grouped) {
      ops.push_back(g.matmul(a, b, grad));
      return;
    }
    auto full = g.tensor(full_uid, kv_full, contiguous(kv_full), io, true);
    ops.push_back(g.matmul(a, b, full));
    ops.push_back(g.reduction(CUDNN_REDUCE_TENSOR_ADD, full, grad));
  };
  // Δ = rowsum(dO ⊙ O) · 1 (dO ⊙ O with the frontend's strides, sequence stride H·D)
  auto t_doo = fp32(kDOO, q_full, {h * sq * d, sq * d, h * d, 1});
  auto t_row_dot = fp32(kRowDot, row_dims, row_strides);
  auto t_softmax_sum = g.tensor(kSoftmaxSum, row_dims, row_strides, CUDNN_DATA_FLOAT);
  ops.push_back(g.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, tdo, to, nullptr, t_doo));
  ops.push_back(g.reduction(CUDNN_REDUCE_TENSOR_ADD, t_doo, t_row_dot));
  ops.push_back(g.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, t_row_dot, t_one, nullptr, t_softmax_sum));
  // P = exp(mask(scale · Q·Kᵀ − Stats))
  auto ts = fp32(kS, s_dims, s_strides);
  auto t_scaled = fp32(kScaled, s_dims, s_strides);
  auto t_sub = fp32(kSubStats, s_dims, s_strides);
  ops.push_back(g.matmul(tq, tkt, ts));
  ops.push_back(g.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, ts, t_scale, nullptr, t_scaled));
  ops.push_back(g.pointwise(CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, t_scaled, t_stats, nullptr, t_sub));
  DescPtr t_logits = t_sub;
  if (spec.causal) {
    auto t_row = g.tensor(kRow, s_dims, s_strides, CUDNN_DATA_INT32, true);
    auto t_col = g.tensor(kCol, s_dims, s_strides, CUDNN_DATA_INT32, true);
    auto t_mask = g.tensor(kMask, s_dims, s_strides, CUDNN_DATA_BOOLEAN, true);
    auto t_neg_inf = g.tensor(kNegInf, one, one, CUDNN_DATA_FLOAT, false, true);
    t_logits = fp32(kMasked, s_dims, s_strides);
    g.causal_mask(ops, spec, t_sub, t_row, t_col, t_mask, s_dims, s_strides,
                  {kSeqKv, kSeqQ, kRowPlusSeqKv, kShiftedRow}, CUDNN_DATA_FLOAT);
    ops.push_back(g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, t_sub, t_neg_inf, t_mask, t_logits));
  }
  auto tp = fp32(kP, s_dims, s_strides);
  ops.push_back(g.pointwise(CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, t_logits, nullptr, nullptr, tp));
  // dV = Pᵀ·dO (summed over each group of query heads under GQA)
  auto t_pt = g.tensor(kPt, st_dims, st_strides, io, true);
  ops.push_back(g.reshape(tp, t_pt));
  kv_grad(t_pt, tdo, tdv, kDVFull);
  // dS = scale · P ⊙ (dO·Vᵀ − Δ)
  auto t_dp = fp32(kDP, s_dims, s_strides);
  auto t_dp_sub = fp32(kDPSub, s_dims, s_strides);
  auto t_ds0 = fp32(kDS0, s_dims, s_strides);
  auto t_ds = fp32(kDS, s_dims, s_strides);
  ops.push_back(g.matmul(tdo, tvt, t_dp));
  ops.push_back(g.pointwise(CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, t_dp, t_softmax_sum, nullptr, t_dp_sub));
  ops.push_back(g.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, t_dp_sub, tp, nullptr, t_ds0));
  ops.push_back(g.pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, t_ds0, t_scale, nullptr, t_ds));
  // dQ = dS·K into the fp32 accumulator, then dQ
  auto tk = g.tensor(kK, p.k.dims, p.k.strides, CUDNN_DATA_FLOAT, true);
  ops.push_back(g.reshape(tkt, tk));
  ops.push_back(g.matmul(t_ds, tk, t_accum));
  ops.push_back(g.pointwise(CUDNN_POINTWISE_IDENTITY, CUDNN_DATA_FLOAT, t_accum, nullptr, nullptr, tdq));
  // dK = dSᵀ·Q (summed over each group under GQA)
  auto t_dst = g.tensor(kDSt, st_dims, st_strides, io, true);
  ops.push_back(g.reshape(t_ds, t_dst));
  kv_grad(t_dst, tq, tdk, kDKFull);
  return ops;
}

// The SDPA_BWD operation's enum values, from cuDNN 9.19's cudnn_graph_v9.h, written as numbers: a
// machine may build against older cuDNN headers than the library it runs (the H200 image's lack
// these names), and a library without the operation refuses it when the graph is built, where the
// composite graph takes over (the plan line says why).
constexpr auto kSdpaBwdOperation = static_cast<cudnnBackendDescriptorType_t>(43);
constexpr auto kSdpaBwdQ = static_cast<cudnnBackendAttributeName_t>(2851);
constexpr auto kSdpaBwdK = static_cast<cudnnBackendAttributeName_t>(2852);
constexpr auto kSdpaBwdV = static_cast<cudnnBackendAttributeName_t>(2853);
constexpr auto kSdpaBwdO = static_cast<cudnnBackendAttributeName_t>(2854);
constexpr auto kSdpaBwdStats = static_cast<cudnnBackendAttributeName_t>(2855);
constexpr auto kSdpaBwdScale = static_cast<cudnnBackendAttributeName_t>(2856);
constexpr auto kSdpaBwdDq = static_cast<cudnnBackendAttributeName_t>(2859);
constexpr auto kSdpaBwdDk = static_cast<cudnnBackendAttributeName_t>(2860);
constexpr auto kSdpaBwdDv = static_cast<cudnnBackendAttributeName_t>(2861);
constexpr auto kSdpaBwdDo = static_cast<cudnnBackendAttributeName_t>(2862);

// Non-causal: the single SDPA_BWD operation (cuDNN 9.17+; K and V not transposed), as cuDNN's
// frontend auto-selects for a graph with no mask, bias or dropout. It keeps its own dQ accumulator
// in cuDNN's workspace.
std::vector<DescPtr> unified_backward_graph(GraphBuilder& g, const AttentionSpec& spec, const BackwardGeometry& p) {
  const cudnnDataType_t io = io_type(spec.dtype);
  const std::int64_t b = spec.batch, h = spec.heads, sq = spec.seq_q, stride = p.stats_seq_stride;
  const Dims one{1, 1, 1, 1};
  auto op = std::make_shared<Desc>(kSdpaBwdOperation);
  auto attach = [&](cudnnBackendAttributeName_t name, std::int64_t uid, const Geometry& geometry) {
    op->set_desc(name, *g.tensor(uid, geometry.dims, geometry.strides, io));
  };
  attach(kSdpaBwdQ, kQ, p.q);
  attach(kSdpaBwdK, kKey, p.k);
  attach(kSdpaBwdV, kValue, p.v);
  attach(kSdpaBwdO, kO, p.o);
  attach(kSdpaBwdDo, kDO, p.dout);
  attach(kSdpaBwdDq, kDQ, p.dq);
  attach(kSdpaBwdDk, kDK, p.dk);
  attach(kSdpaBwdDv, kDV, p.dv);
  op->set_desc(kSdpaBwdStats,
               *g.tensor(kStats, {b, h, sq, 1}, {h * stride, stride, 1, 1}, CUDNN_DATA_FLOAT, false, false,
                         p.stats_alignment));
  op->set_desc(kSdpaBwdScale, *g.tensor(kScale, one, one, CUDNN_DATA_FLOAT, false, true));
  op->finalize();
  g.keep.push_back(op);
  return {op};
}

// The ten device pointers a pack is keyed by: Q, K, V, O, dO, Stats, dQ, dK, dV, and the dQ
// accumulator (the composite graph's Δ follows the accumulator, bound at accumulator + accum_bytes).
using Pointers = std::array<const void*, 10>;

struct Plan : EnginePlan {
  GraphBuilder graph;
  // cuDNN's workspace, then (composite) the dQ accumulator at accum_offset and Δ right after it
  void* workspace = nullptr;
  std::size_t workspace_alloc = 0;
  std::size_t accum_offset = 0, accum_bytes = 0;
  bool unified = false;  // the SDPA_BWD operation: no accumulator of ours, no 1.0
  bool causal = false;   // the pack binds the −inf the mask writes
  bool shifted = false;  // bottom-right with Sq < Sk: the pack binds the two lengths
  // By-value scalars read through host pointers at execute time: NaN scale until build sets it.
  float scale = std::numeric_limits<float>::quiet_NaN();
  float one = 1.0f;
  float neg_inf = -std::numeric_limits<float>::infinity();
  std::array<std::int32_t, 2> seq_lengths{};  // Sk, Sq
  std::list<std::pair<Pointers, std::unique_ptr<Desc>>> packs;  // the last few pointer sets, newest first
  ~Plan() {
    if (workspace) memory::release(Device::cuda, workspace, workspace_alloc);
  }
};

std::unique_ptr<Desc> make_pack(const Plan& p, const Pointers& ptr, void* workspace) {
  std::vector<std::int64_t> uids{
      kQ, p.unified ? kKey : kKt, p.unified ? kValue : kVt, kO, kDO, kStats, kDQ, kDK, kDV, kScale};
  std::vector<void*> data;
  for (std::size_t i = 0; i < 9; ++i) data.push_back(const_cast<void*>(ptr[i]));
  data.push_back(const_cast<float*>(&p.scale));
  if (!p.unified) {
    uids.push_back(kDQAccum);
    data.push_back(const_cast<void*>(ptr[9]));
    uids.push_back(kSoftmaxSum);
    data.push_back(static_cast<char*>(const_cast<void*>(ptr[9])) + p.accum_bytes);
    uids.push_back(kOne);
    data.push_back(const_cast<float*>(&p.one));
  }
  if (p.causal) {
    uids.push_back(kNegInf);
    data.push_back(const_cast<float*>(&p.neg_inf));
  }
  if (p.shifted) {
    uids.push_back(kSeqKv);
    data.push_back(const_cast<std::int32_t*>(&p.seq_lengths[0]));
    uids.push_back(kSeqQ);
    data.push_back(const_cast<std::int32_t*>(&p.seq_lengths[1]));
  }
  auto desc = std::make_unique<Desc>(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  desc->set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids.data(), static_cast<std::int64_t>(uids.size()));
  desc->set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, data.data(),
            static_cast<std::int64_t>(data.size()));
  desc->set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &workspace);
  desc->finalize();
  return desc;
}

// Where our tensors start past cuDNN's workspace of `cudnn_bytes`: at least 256 bytes in (the
// kernels may use their workspace even when it reports 0 bytes, so it is never NULL or empty), on a
// 256-byte boundary.
std::int64_t own_tensors_offset(std::int64_t cudnn_bytes) {
  const std::int64_t at_least = std::max<std::int64_t>(cudnn_bytes, 256);
  return (at_least + 255) / 256 * 256;
}

// The composite graph's tensors in the workspace after cuDNN's own: the fp32 dQ accumulator
// [B,H,Sq,D] and Δ [B,H,Sq,1] (cuDNN's frontend lays them out so); none for SDPA_BWD.
std::int64_t own_workspace_bytes(const AttentionSpec& spec, bool unified) {
  return unified ? 0 : spec.batch * spec.heads * spec.seq_q * (spec.head_dim + 1) * 4;
}

// Whether the composite graph's dQ accumulator must be zeroed before each execution: before cuDNN
// 9.6 the caller zeroed it (cuDNN's frontend memsets it there); from 9.6 the library's kernels
// initialise it themselves (the frontend only reserves it), and a memset would cost a pass over
// B·H·Sq·D·4 bytes per backward.
bool caller_zeroes_dq_accumulator() { return cudnn_version() < 90600; }

// Times the candidates on zeroed scratch tensors of the plan's geometry (the backward's time does
// not depend on the values), the accumulator zeroed before each run where a real call zeroes it.
void time_backward_candidates(std::vector<Candidate>& candidates, cudnnHandle_t handle, const AttentionSpec& spec,
                              const BackwardGeometry& geometry, const Plan& p) {
  std::vector<Tensor> scratch;
  for (const Geometry* g : {&geometry.q, &geometry.k, &geometry.v, &geometry.o, &geometry.dout, &geometry.dq,
                            &geometry.dk, &geometry.dv})
    scratch.push_back(Tensor::empty({span_elements(*g)}, spec.dtype, Device::cuda));
  scratch.push_back(Tensor::empty({spec.batch * spec.heads * geometry.stats_seq_stride}, DType::fp32, Device::cuda));
  const std::int64_t accum_offset = own_tensors_offset(largest_workspace(candidates));
  const auto accum_bytes = static_cast<std::int64_t>(p.accum_bytes);
  const Tensor workspace =
      Tensor::empty({(accum_offset + own_workspace_bytes(spec, p.unified)) / 4}, DType::fp32, Device::cuda);
  char* accum = static_cast<char*>(workspace.raw()) + accum_offset;
  cudaStream_t stream = backend_stream();
  for (const Tensor& t : scratch)
    ATTNPROF_CUDA_CHECK(cudaMemsetAsync(t.raw(), 0, static_cast<std::size_t>(t.numel()) * dtype_size(t.dtype()), stream));
  const Pointers pointers{scratch[0].raw(), scratch[1].raw(), scratch[2].raw(), scratch[3].raw(), scratch[4].raw(),
                          scratch[8].raw(), scratch[5].raw(), scratch[6].raw(), scratch[7].raw(), accum};
  const auto pack = make_pack(p, pointers, workspace.raw());
  time_candidates(candidates, handle, stream, pack->get(), [&] {
    if (accum_bytes > 0 && caller_zeroes_dq_accumulator())
      ATTNPROF_CUDA_CHECK(cudaMemsetAsync(accum, 0, static_cast<std::size_t>(accum_bytes), stream));
  });
}

// dtype, B, H, Hkv, Sq, Sk, D, the eight tensors' strides, causal, the causal offset, the LSE's
// row stride and alignment, the device, the --cudnn-engine override.
using PlanKey = std::tuple<int, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                           std::array<Dims, 8>, bool, std::int64_t, std::int64_t, std::int64_t, int, int>;

class BackwardCache {
 public:
  BackwardCache() { ATTNPROF_CUDNN_CHECK(cudnnCreate(&handle_)); }
  // Process lifetime (no destructor work after the driver unloads).

  static PlanKey key_of(const AttentionSpec& spec, const BackwardGeometry& g) {
    int device = 0;
    ATTNPROF_CUDA_CHECK(cudaGetDevice(&device));
    return PlanKey{static_cast<int>(spec.dtype),
                   spec.batch,
                   spec.heads,
                   spec.kv_heads,
                   spec.seq_q,
                   spec.seq_k,
                   spec.head_dim,
                   {g.q.strides, g.k.strides, g.v.strides, g.o.strides, g.dout.strides, g.dq.strides, g.dk.strides,
                    g.dv.strides},
                   spec.causal,
                   spec.causal_offset(),
                   g.stats_seq_stride,
                   g.stats_alignment,
                   device,
                   configured_engine_config()};
  }
  Plan* find(const PlanKey& key) {
    auto found = plans_.find(key);
    return found == plans_.end() ? nullptr : found->second.get();
  }

  Plan& plan(const AttentionSpec& spec, const BackwardGeometry& geometry) {
    return cached_plan(plans_, key_of(spec, geometry), [&](std::unique_ptr<Plan>& plan) {
      if (spec.causal) return build(*plan, spec, geometry, false);
      // The SDPA_BWD operation first; the composite graph, saying why, where no engine takes it.
      try {
        build(*plan, spec, geometry, true);
      } catch (const Error& refused) {
        plan = std::make_unique<Plan>();
        build(*plan, spec, geometry, false);
        plan->info.graph += fmt::format(" (the SDPA_BWD operation was refused: {})", refused.what());
      }
    });
  }

  cudnnHandle_t handle() const { return handle_; }
  std::mutex& mutex() { return mutex_; }

 private:
  void build(Plan& p, const AttentionSpec& spec, const BackwardGeometry& geometry, bool unified) {
    p.unified = unified;
    const std::vector<DescPtr> ops =
        unified ? unified_backward_graph(p.graph, spec, geometry) : backward_graph(p.graph, spec, geometry);
    p.info.graph = unified ? std::string("unified SDPA_BWD operation")
                           : fmt::format("composite SDPA backward graph{} ({} ops)",
                                         !spec.causal                 ? ""
                                         : spec.causal_offset() == 0 ? ", causal"
                                                                     : ", causal bottom-right",
                                         ops.size());
    p.causal = spec.causal;
    p.shifted = spec.causal && spec.causal_offset() != 0;
    p.seq_lengths = {static_cast<std::int32_t>(spec.seq_k), static_cast<std::int32_t>(spec.seq_q)};
    p.scale = static_cast<float>(softmax_scale_of(spec));
    p.accum_bytes = unified ? 0 : static_cast<std::size_t>(spec.batch * spec.heads * spec.seq_q * spec.head_dim * 4);
    choose_engine(p, handle_, ops, spec, "the SDPA backward graph", [&](std::vector<Candidate>& candidates) {
      time_backward_candidates(candidates, handle_, spec, geometry, p);
    });
    p.accum_offset = static_cast<std::size_t>(own_tensors_offset(p.info.workspace_bytes));
    p.workspace_alloc = p.accum_offset + static_cast<std::size_t>(own_workspace_bytes(spec, unified));
    p.info.workspace_bytes = static_cast<std::int64_t>(p.workspace_alloc);
    p.workspace = memory::allocate(Device::cuda, p.workspace_alloc);
  }

  cudnnHandle_t handle_ = nullptr;
  std::mutex mutex_;  // plans are not guaranteed thread-safe: one caller at a time
  std::map<PlanKey, std::unique_ptr<Plan>> plans_;
};

BackwardCache& cache() {
  static BackwardCache* instance = new BackwardCache();
  return *instance;
}

constexpr std::size_t kPacksPerPlan = 8;

cudnnBackendDescriptor_t variant_pack(Plan& p, const Pointers& pointers) {
  for (auto it = p.packs.begin(); it != p.packs.end(); ++it) {
    if (it->first == pointers) {
      p.packs.splice(p.packs.begin(), p.packs, it);  // most recent first
      return p.packs.front().second->get();
    }
  }
  p.packs.emplace_front(pointers, make_pack(p, pointers, p.workspace));
  if (p.packs.size() > kPacksPerPlan) p.packs.pop_back();
  return p.packs.front().second->get();
}

// Head dims, and causal bottom-right with rows that see no key: on the H200 (cuDNN 9.19) the
// backward of 2x4x200x64 Sk 72 (GQA, bshd) came out wrong in dQ and dK (relative error 0.9 against
// fp64), so the rows-that-see-no-key problem is refused, not run.
void check_backward_spec(const AttentionSpec& spec) {
  if (spec.head_dim % 8 != 0 || spec.head_dim > 128)
    throw UsageError(
        fmt::format("head_dim {}: the cudnn backward takes multiples of 8 up to 128", spec.head_dim));
  if (spec.causal && spec.causal_offset() < 0)
    throw UsageError(fmt::format("seq {} > seq_k {} with causal bottom-right (rows that see no key): the cudnn "
                                 "backward takes seq <= seq_k there",
                                 spec.seq_q, spec.seq_k));
}

// The problem cuDNN runs (every query row sees a key: check_backward_spec refuses the others).
BackwardGeometry solvable_geometry(const AttentionSpec& spec, const Tensor& dq, const Tensor& dk, const Tensor& dv,
                                   const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                   const Tensor& dout, const void* lse_rows) {
  return {geometry_of(q),  geometry_of(k),  geometry_of(v),  geometry_of(out), geometry_of(dout),
          geometry_of(dq), geometry_of(dk), geometry_of(dv), spec.seq_q,       alignment_of(lse_rows)};
}

// The same for tensors laid out as make_inputs/make_output/make_grads make them.
BackwardGeometry layout_geometry(const AttentionSpec& spec) {
  const Geometry query_side = geometry_of(spec.batch, spec.heads, spec.seq_q, spec.head_dim, spec.layout);
  const Geometry kv = geometry_of(spec.batch, spec.kv_heads, spec.seq_k, spec.head_dim, spec.layout);
  return {query_side, kv, kv, query_side, query_side, query_side, kv, kv, spec.seq_q, 16};
}

}  // namespace

CudnnPlanInfo cudnn_sdpa_backward_prepare(const AttentionSpec& spec) {
  check_backward_spec(spec);
  std::lock_guard lock(cache().mutex());
  return cache().plan(spec, layout_geometry(spec)).info;
}

std::int64_t cudnn_sdpa_backward_workspace_bytes(const AttentionSpec& spec) {
  if (spec.head_dim % 8 == 0 && spec.head_dim <= 128) {
    std::lock_guard lock(cache().mutex());
    if (const Plan* p = cache().find(BackwardCache::key_of(spec, layout_geometry(spec))))
      return static_cast<std::int64_t>(p->workspace_alloc);
  }
  return own_workspace_bytes(spec, false);
}

CudnnPlanInfo cudnn_sdpa_backward(const AttentionSpec& spec, Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& q,
                                  const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                                  const Tensor& dout, cudaStream_t stream) {
  check_backward_spec(spec);
  for (const Tensor* t : std::initializer_list<const Tensor*>{&dq, &dk, &dv, &q, &k, &v, &out, &dout})
    if (t->rank() != 4 || t->stride(3) != 1 || t->device() != Device::cuda || t->dtype() != spec.dtype)
      throw Error(fmt::format("cudnn backward: {} must be a rank-4 CUDA {} tensor with unit stride in the head dim",
                              t->describe(), dtype_name(spec.dtype)));
  if (lse.dtype() != DType::fp32 || !lse.is_contiguous() || lse.numel() != spec.batch * spec.heads * spec.seq_q)
    throw Error(fmt::format("cudnn backward: lse {} must be a contiguous fp32 [B, H, Sq] tensor", lse.describe()));
  const void* lse_rows = lse.raw();
  const BackwardGeometry geometry = solvable_geometry(spec, dq, dk, dv, q, k, v, out, dout, lse_rows);
  BackwardCache& c = cache();
  std::lock_guard lock(c.mutex());
  Plan& plan = c.plan(spec, geometry);
  const Pointers pointers{q.raw(),  k.raw(),  v.raw(),  out.raw(), dout.raw(), lse_rows,
                          dq.raw(), dk.raw(), dv.raw(), static_cast<char*>(plan.workspace) + plan.accum_offset};
  cudnnBackendDescriptor_t pack = variant_pack(plan, pointers);
  if (plan.accum_bytes > 0 && caller_zeroes_dq_accumulator())
    ATTNPROF_CUDA_CHECK(cudaMemsetAsync(const_cast<void*>(pointers[9]), 0, plan.accum_bytes, stream));
  ATTNPROF_CUDNN_CHECK(cudnnSetStream(c.handle(), stream));
  const cudnnStatus_t status = cudnnBackendExecute(c.handle(), plan.plan->get(), pack);
  if (status != CUDNN_STATUS_SUCCESS)
    throw Error(fmt::format("cudnnBackendExecute (SDPA backward) failed for {}: {}: {}", problem_text(spec),
                            cudnnGetErrorString(status), last_cudnn_error()));
  return plan.info;
}

}  // namespace attnprof::cuda
