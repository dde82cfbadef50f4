#include "cuda/cudnn_graph.h"

#include <attnprof/error.h>
#include <attnprof/kernel_overrides.h>

#include <fmt/format.h>

#include <algorithm>

#include "cuda/event_pairs.h"
#include "cuda/problem_text.h"

namespace attnprof::cuda::cudnn_graph {

cudnnDataType_t io_type(DType dtype) {
  if (dtype == DType::bf16) return CUDNN_DATA_BFLOAT16;
  if (dtype == DType::fp16) return CUDNN_DATA_HALF;
  throw UsageError(fmt::format("dtype {}: cudnn takes bf16 or fp16", dtype_name(dtype)));
}

DescPtr GraphBuilder::tensor(std::int64_t uid, Dims dims, Dims strides, cudnnDataType_t type, bool is_virtual,
                             bool by_value, std::int64_t alignment, cudnnBackendTensorReordering_t reordering) {
  auto t = std::make_shared<Desc>(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  t->set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &type);
  t->set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims.data(), 4);
  t->set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides.data(), 4);
  t->set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &uid);
  t->set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &alignment);
  if (is_virtual) {
    bool yes = true;
    t->set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, &yes);
  }
  if (by_value) {
    bool yes = true;
    t->set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, &yes);
  }
  if (reordering != CUDNN_TENSOR_REORDERING_NONE)
    t->set(CUDNN_ATTR_TENSOR_REORDERING_MODE, CUDNN_TYPE_TENSOR_REORDERING_MODE, &reordering);
  t->finalize();
  keep.push_back(t);
  return t;
}

DescPtr GraphBuilder::pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t precision, const DescPtr& x,
                                const DescPtr& b, const DescPtr& t, const DescPtr& y, std::int64_t axis) {
  auto pw = std::make_shared<Desc>(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  pw->set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, &mode);
  pw->set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, &precision);
  if (axis >= 0) pw->set(CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, &axis);
  pw->finalize();
  keep.push_back(pw);
  auto op = std::make_shared<Desc>(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, *pw);
  op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, *x);
  if (b) op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
  if (t) op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, *t);
  op->set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, *y);
  float one = 1.0f;
  op->set(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, &one);
  op->set(CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, &one);
  op->finalize();
  keep.push_back(op);
  return op;
}

DescPtr GraphBuilder::matmul(const DescPtr& a, const DescPtr& b, const DescPtr& c) {
  auto mm = std::make_shared<Desc>(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  mm->set(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &compute);
  mm->finalize();
  keep.push_back(mm);
  auto op = std::make_shared<Desc>(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  op->set_desc(CUDNN_ATTR_OPERATION_MATMUL_ADESC, *a);
  op->set_desc(CUDNN_ATTR_OPERATION_MATMUL_BDESC, *b);
  op->set_desc(CUDNN_ATTR_OPERATION_MATMUL_CDESC, *c);
  op->set_desc(CUDNN_ATTR_OPERATION_MATMUL_DESC, *mm);
  op->finalize();
  keep.push_back(op);
  return op;
}

DescPtr GraphBuilder::reduction(cudnnReduceTensorOp_t reduce, const DescPtr& x, const DescPtr& y) {
  auto r = std::make_shared<Desc>(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  bool deterministic = false;  // as the frontend sets on 9.11+ ([OBS])
  r->set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, &reduce);
  r->set(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &compute);
  r->set(CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC, CUDNN_TYPE_BOOLEAN, &deterministic);
  r->finalize();
  keep.push_back(r);
  auto op = std::make_shared<Desc>(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
  op->set_desc(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, *x);
  op->set_desc(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, *y);
  op->set_desc(CUDNN_ATTR_OPERATION_REDUCTION_DESC, *r);
  op->finalize();
  keep.push_back(op);
  return op;
}

DescPtr GraphBuilder::reshape(const DescPtr& x, const DescPtr& y) {
  auto op = std::make_shared<Desc>(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
  op->set_desc(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, *x);
  op->set_desc(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, *y);
  op->finalize();
  keep.push_back(op);
  return op;
}

void GraphBuilder::causal_mask(std::vector<DescPtr>& ops, const AttentionSpec& spec, const DescPtr& scores,
                               const DescPtr& row, const DescPtr& col, const DescPtr& mask, const Dims& s_dims,
                               const Dims& s_strides, const ShiftUids& uids, cudnnDataType_t index_precision) {
  const Dims one{1, 1, 1, 1};
  ops.push_back(pointwise(CUDNN_POINTWISE_GEN_INDEX, index_precision, scores, nullptr, nullptr, row, 2));
  ops.push_back(pointwise(CUDNN_POINTWISE_GEN_INDEX, index_precision, scores, nullptr, nullptr, col, 3));
  DescPtr mask_row = row;
  if (spec.causal_offset() != 0) {
    auto seq_kv = tensor(uids.seq_kv, one, one, CUDNN_DATA_INT32, false, true);
    auto seq_q = tensor(uids.seq_q, one, one, CUDNN_DATA_INT32, false, true);
    auto row_plus = tensor(uids.row_plus_seq_kv, s_dims, s_strides, CUDNN_DATA_INT32, true);
    mask_row = tensor(uids.shifted_row, s_dims, s_strides, CUDNN_DATA_INT32, true);
    ops.push_back(pointwise(CUDNN_POINTWISE_ADD, CUDNN_DATA_INT32, row, seq_kv, nullptr, row_plus));
    ops.push_back(pointwise(CUDNN_POINTWISE_SUB, CUDNN_DATA_INT32, row_plus, seq_q, nullptr, mask_row));
  }
  ops.push_back(pointwise(CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, mask_row, col, nullptr, mask));
}

Geometry geometry_of(const Tensor& t) {
  return {{t.size(0), t.size(1), t.size(2), t.size(3)}, {t.stride(0), t.stride(1), t.stride(2), t.stride(3)}};
}

Geometry geometry_of(std::int64_t b, std::int64_t h, std::int64_t s, std::int64_t d, Layout layout) {
  if (layout == Layout::bshd) return {{b, h, s, d}, {s * h * d, d, h * d, 1}};
  return {{b, h, s, d}, {h * s * d, s * d, d, 1}};
}

std::int64_t span_elements(const Geometry& g) {
  std::int64_t last = 0;
  for (std::size_t i = 0; i < 4; ++i) last += (g.dims[i] - 1) * g.strides[i];
  return last + 1;
}

Geometry transposed(const Geometry& g) {
  return {{g.dims[0], g.dims[1], g.dims[3], g.dims[2]}, {g.strides[0], g.strides[1], g.strides[3], g.strides[2]}};
}

std::int64_t blind_rows(const AttentionSpec& spec) { return spec.causal_offset() < 0 ? -spec.causal_offset() : 0; }
AttentionSpec solvable_spec(const AttentionSpec& spec) {
  AttentionSpec s = spec;
  if (blind_rows(spec) > 0) {
    s.seq_q = spec.seq_k;
    s.causal_align = CausalAlign::top_left;
  }
  return s;
}

Tensor rows_of(const Tensor& t, std::int64_t first, std::int64_t rows) {
  return t.view_strided({t.size(0), t.size(1), rows, t.size(3)}, t.strides(), first * t.stride(2));
}
std::int64_t alignment_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0 ? 16 : 4; }

std::string last_cudnn_error() {
  char message[2048] = {0};
  cudnnGetLastErrorString(message, sizeof message);
  std::string text(message);
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text.empty() ? "no reason given" : text;
}

std::int64_t get_int64(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name) {
  std::int64_t value = -1, count = 0;
  if (cudnnBackendGetAttribute(d, name, CUDNN_TYPE_INT64, 1, &count, &value) != CUDNN_STATUS_SUCCESS) return -1;
  return value;
}

int configured_engine_config() { return kernel_overrides().cudnn_engine; }

namespace {

void read_engine_info(cudnnBackendDescriptor_t config, CudnnPlanInfo& info) {
  Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t raw = engine.get();
  std::int64_t count = 0;
  if (cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &raw) ==
      CUDNN_STATUS_SUCCESS) {
    info.engine_id = get_int64(raw, CUDNN_ATTR_ENGINE_GLOBAL_INDEX);
    std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> notes{};
    std::int64_t noted = 0;
    if (cudnnBackendGetAttribute(raw, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                 static_cast<std::int64_t>(notes.size()), &noted, notes.data()) == CUDNN_STATUS_SUCCESS) {
      const auto end = notes.begin() + std::clamp<std::int64_t>(noted, 0, static_cast<std::int64_t>(notes.size()));
      info.nondeterministic = std::find(notes.begin(), end, CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) != end ? 1 : 0;
    }
  }
  std::array<std::unique_ptr<Desc>, 32> knobs;
  std::array<cudnnBackendDescriptor_t, 32> raw_knobs{};
  for (std::size_t i = 0; i < knobs.size(); ++i) {
    knobs[i] = std::make_unique<Desc>(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
    raw_knobs[i] = knobs[i]->get();
  }
  if (cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                               static_cast<std::int64_t>(raw_knobs.size()), &count, raw_knobs.data()) != CUDNN_STATUS_SUCCESS)
    return;
  for (std::int64_t i = 0; i < count && i < static_cast<std::int64_t>(raw_knobs.size()); ++i) {
    cudnnBackendKnobType_t type{};
    std::int64_t n = 0;
    if (cudnnBackendGetAttribute(raw_knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &n, &type) !=
        CUDNN_STATUS_SUCCESS)
      continue;
    if (type == CUDNN_KNOB_TYPE_KERNEL_CFG) info.kernel_cfg = get_int64(raw_knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE);
  }
}

}  // namespace

std::int64_t largest_workspace(const std::vector<Candidate>& candidates) {
  std::int64_t bytes = 256;
  for (const Candidate& c : candidates) bytes = std::max(bytes, c.workspace_bytes);
  return bytes;
}

void time_candidates(std::vector<Candidate>& candidates, cudnnHandle_t handle, cudaStream_t stream,
                     cudnnBackendDescriptor_t pack, const std::function<void()>& before_each) {
  ATTNPROF_CUDNN_CHECK(cudnnSetStream(handle, stream));
  EventPairs events(kTimedRuns);
  for (Candidate& c : candidates) {
    // A config that finalized but does not execute is left out with cuDNN's reason (the others
    // still compete); its status is an error code, not a sticky CUDA fault.
    auto execute = [&] {
      const cudnnStatus_t status = cudnnBackendExecute(handle, c.plan->get(), pack);
      if (status != CUDNN_STATUS_SUCCESS && c.failure.empty())
        c.failure = fmt::format("{}: {}", cudnnGetErrorString(status), last_cudnn_error());
      return status == CUDNN_STATUS_SUCCESS;
    };
    if (before_each) before_each();
    if (!execute()) continue;
    for (int r = 0; r < kTimedRuns; ++r) {
      if (before_each) before_each();
      events.record_begin(static_cast<std::size_t>(r), stream);
      execute();
      events.record_end(static_cast<std::size_t>(r), stream);
    }
    ATTNPROF_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (!c.failure.empty()) continue;
    std::vector<double> us(kTimedRuns);
    for (std::size_t r = 0; r < us.size(); ++r) us[r] = 1000.0 * events.elapsed_ms(r);
    std::nth_element(us.begin(), us.begin() + kTimedRuns / 2, us.end());
    c.median_us = us[kTimedRuns / 2];
  }
}

EnginePlan::~EnginePlan() {
  for (auto c : configs) cudnnBackendDestroyDescriptor(c);
}

void choose_engine(EnginePlan& p, cudnnHandle_t handle, const std::vector<DescPtr>& ops, const AttentionSpec& spec,
                   const char* what, const std::function<void(std::vector<Candidate>&)>& time) {
  p.operation_graph = std::make_unique<Desc>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  std::vector<cudnnBackendDescriptor_t> raw_ops;
  for (auto& op : ops) raw_ops.push_back(op->get());
  p.operation_graph->set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, raw_ops.data(),
                         static_cast<std::int64_t>(raw_ops.size()));
  p.operation_graph->set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &handle);
  if (cudnnBackendFinalize(p.operation_graph->get()) != CUDNN_STATUS_SUCCESS)
    throw UsageError(
        fmt::format("cudnn: {} for {} is not supported: {}", what, problem_text(spec), last_cudnn_error()));

  Desc heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heuristics.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, *p.operation_graph);
  cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  heuristics.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &mode);
  if (cudnnBackendFinalize(heuristics.get()) != CUDNN_STATUS_SUCCESS)
    throw UsageError(fmt::format("cudnn: no engine for {}: {}", problem_text(spec), last_cudnn_error()));
  std::int64_t available = 0;
  ATTNPROF_CUDNN_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &available, nullptr));
  if (available <= 0)
    throw UsageError(fmt::format("cudnn: no engine takes {}: {}", problem_text(spec), last_cudnn_error()));
  p.configs.resize(static_cast<std::size_t>(available));
  for (auto& c : p.configs) ATTNPROF_CUDNN_CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &c));
  std::int64_t returned = 0;
  ATTNPROF_CUDNN_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                CUDNN_TYPE_BACKEND_DESCRIPTOR, available, &returned,
                                                p.configs.data()));
  std::string reasons;
  const int wanted = configured_engine_config();
  if (wanted >= returned)
    throw UsageError(fmt::format("cudnn_engine {}: heuristics offer {} configs for {} (allowed 0..{})", wanted,
                                 returned, problem_text(spec), returned - 1));
  // Heuristics mode A's order is not PyTorch's choice at every shape (8x16x1024x64 causal D 64:
  // its first config is knob 32, 64 µs, where PyTorch runs knob 7, 57.5 µs, our second), so the
  // first kTimedConfigs configs whose plans finalize (NVRTC compiles each at finalize) are timed
  // on scratch tensors of this geometry and the fastest is kept, as cuDNN's frontend autotuning
  // does. KernelOverrides::cudnn_engine n builds config n alone, untimed.
  std::vector<Candidate> candidates;
  for (std::int64_t i = wanted < 0 ? 0 : wanted;
       i < (wanted < 0 ? returned : wanted + 1) && static_cast<int>(candidates.size()) < kTimedConfigs; ++i) {
    auto plan = std::make_unique<Desc>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    cudnnBackendDescriptor_t config = p.configs[static_cast<std::size_t>(i)];
    plan->set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, &config);
    if (cudnnBackendFinalize(plan->get()) != CUDNN_STATUS_SUCCESS) {
      reasons += (reasons.empty() ? "" : "; ") + last_cudnn_error();
      continue;
    }
    Candidate c;
    c.index = i;
    c.plan = std::move(plan);
    c.workspace_bytes = get_int64(c.plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE);
    read_engine_info(config, c.info);
    candidates.push_back(std::move(c));
  }
  if (candidates.empty())
    throw UsageError(fmt::format("cudnn: no execution plan builds for {}: {}", problem_text(spec), reasons));
  std::size_t best = 0;
  if (candidates.size() > 1) {
    time(candidates);
    best = candidates.size();
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const Candidate& c = candidates[i];
      p.info.timed += p.info.timed.empty() ? "" : ", ";
      p.info.timed += c.failure.empty() ? fmt::format("cfg {} {:.1f} µs", c.info.kernel_cfg, c.median_us)
                                        : fmt::format("cfg {} does not execute ({})", c.info.kernel_cfg, c.failure);
      if (c.failure.empty() && (best == candidates.size() || c.median_us < candidates[best].median_us)) best = i;
    }
    if (best == candidates.size())
      throw UsageError(fmt::format("cudnn: no engine config executes {}: {}", problem_text(spec), p.info.timed));
  }
  Candidate& chosen = candidates[best];
  p.info.engine_id = chosen.info.engine_id;
  p.info.kernel_cfg = chosen.info.kernel_cfg;
  p.info.nondeterministic = chosen.info.nondeterministic;
  p.info.workspace_bytes = chosen.workspace_bytes;
  p.info.config_index = chosen.index;
  p.info.configs_offered = returned;
  p.plan = std::move(chosen.plan);
}

}  // namespace attnprof::cuda::cudnn_graph
