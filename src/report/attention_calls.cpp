#include "report/attention_calls.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "report/steps.h"

namespace attnprof::report {
namespace {

using trace::Category;
using Dims = std::vector<std::int64_t>;

constexpr std::string_view kEvaluate = "autograd::engine::evaluate_function: ";

// One CPU op in its thread's tree of ops (nesting by time containment).
struct Op {
  const TimelineEvent* event = nullptr;
  std::string_view name;  // for an autograd::engine::evaluate_function range, the node's name
  std::vector<std::size_t> children;
};

struct Forest {
  std::vector<Op> ops;
  std::vector<std::size_t> roots;
};

std::string_view node_name(std::string_view name) {
  return name.substr(0, kEvaluate.size()) == kEvaluate ? name.substr(kEvaluate.size()) : name;
}

std::unordered_map<std::uint32_t, Forest> op_forests(const Timeline& timeline) {
  std::unordered_map<std::uint32_t, std::vector<const TimelineEvent*>> by_track;
  for (const TimelineEvent& e : timeline.events())
    if (e.category == Category::cpu_op) by_track[e.track].push_back(&e);
  std::unordered_map<std::uint32_t, Forest> forests;
  for (auto& [track, events] : by_track) {
    std::stable_sort(events.begin(), events.end(), [](const TimelineEvent* a, const TimelineEvent* b) {
      return a->ts_ns != b->ts_ns ? a->ts_ns < b->ts_ns : a->dur_ns > b->dur_ns;
    });
    Forest& f = forests[track];
    f.ops.reserve(events.size());
    std::vector<std::size_t> open;  // the chain of ops containing the current one
    for (const TimelineEvent* e : events) {
      // Nested by its start, as forward_work.cpp nests: a child that ends after its parent (seen
      // in real traces) stays its child.
      while (!open.empty() && f.ops[open.back()].event->end_ns() <= e->ts_ns) open.pop_back();
      std::size_t index = f.ops.size();
      f.ops.push_back(Op{e, node_name(timeline.name(*e)), {}});
      (open.empty() ? f.roots : f.ops[open.back()].children).push_back(index);
      open.push_back(index);
    }
  }
  return forests;
}

// The recorded inputs, parsed (empty where the trace has none or they do not parse).
std::vector<Dims> dims_of(const Timeline& timeline, const TimelineEvent& e) {
  std::vector<Dims> out;
  const std::string& text = timeline.inputs(e).dims;
  if (text.empty()) return out;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return out;
  for (const auto& d : j) {
    Dims dims;
    if (d.is_array())
      for (const auto& n : d)
        if (n.is_number_integer()) dims.push_back(n.get<std::int64_t>());
    out.push_back(std::move(dims));
  }
  return out;
}

std::vector<std::string> strings_of(const std::string& text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return out;
  for (const auto& s : j) out.push_back(s.is_string() ? s.get<std::string>() : std::string());
  return out;
}

std::string dtype_of(const Timeline& timeline, const TimelineEvent& e) {
  auto types = strings_of(timeline.inputs(e).types);
  if (types.empty()) return {};
  const std::string& t = types[0];
  if (t == "c10::BFloat16") return "bf16";
  if (t == "c10::Half") return "fp16";
  if (t == "float") return "fp32";
  if (t == "double") return "fp64";
  return {};
}

std::optional<bool> concrete_bool(const Timeline& timeline, const TimelineEvent& e, std::size_t index) {
  auto values = strings_of(timeline.inputs(e).concrete);
  if (index >= values.size()) return std::nullopt;
  if (values[index] == "True") return true;
  if (values[index] == "False") return false;
  return std::nullopt;
}

// q [B, H, Sq, D] and k [B, KVH, Sk, D] (3-D inputs: [B·H, S, D], batch and heads unknown).
AttentionShape shape_from_qk(const Dims& q, const Dims& k) {
  AttentionShape s;
  if (q.size() < 3 || k.size() != q.size()) return s;
  s.seq_q = q[q.size() - 2];
  s.head_dim = q.back();
  s.seq_k = k[k.size() - 2];
  if (q.size() == 4) {
    s.batch = q[0];
    s.heads = q[1];
    s.kv_heads = k[1];
  }
  return s;
}

// The SDPA op family: the implementation each op names ("" for the dispatching wrapper), and the
// position of is_causal in its schema (PyTorch's native_functions.yaml), -1 where it has none.
struct SdpaOp {
  std::string_view name, implementation;
  int causal_arg;
  bool backward;
};
constexpr std::array kSdpaOps{
    SdpaOp{"aten::scaled_dot_product_attention", "", 5, false},
    SdpaOp{"aten::_scaled_dot_product_cudnn_attention", "cudnn", 6, false},
    SdpaOp{"aten::_cudnn_attention_forward", "cudnn", -1, false},
    SdpaOp{"aten::_scaled_dot_product_flash_attention", "flash", 4, false},
    SdpaOp{"aten::_scaled_dot_product_flash_attention_for_cpu", "flash", 4, false},
    SdpaOp{"aten::_flash_attention_forward", "flash", -1, false},
    SdpaOp{"aten::_scaled_dot_product_efficient_attention", "efficient", 6, false},
    SdpaOp{"aten::_efficient_attention_forward", "efficient", -1, false},
    SdpaOp{"aten::_scaled_dot_product_attention_math", "math", 5, false},
    SdpaOp{"aten::_scaled_dot_product_fused_attention_overrideable", "unknown", 5, false},
    SdpaOp{"ScaledDotProductCudnnAttentionBackward0", "cudnn", -1, true},
    SdpaOp{"ScaledDotProductFlashAttentionBackward0", "flash", -1, true},
    SdpaOp{"ScaledDotProductFlashAttentionForCpuBackward0", "flash", -1, true},
    SdpaOp{"ScaledDotProductEfficientAttentionBackward0", "efficient", -1, true},
    SdpaOp{"ScaledDotProductFusedAttentionOverrideableBackward0", "unknown", -1, true},
    SdpaOp{"aten::_scaled_dot_product_cudnn_attention_backward", "cudnn", 14, true},
    SdpaOp{"aten::_scaled_dot_product_flash_attention_backward", "flash", 11, true},
    SdpaOp{"aten::_scaled_dot_product_flash_attention_for_cpu_backward", "flash", 7, true},
    SdpaOp{"aten::_scaled_dot_product_efficient_attention_backward", "efficient", 11, true},
};

const SdpaOp* sdpa_op(std::string_view name) {
  for (const SdpaOp& op : kSdpaOps)
    if (op.name == name) return &op;
  return nullptr;
}

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }
bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool is_flex(std::string_view name) { return contains(name, "flex_attention"); }

// Ops of the flash_attn and xformers libraries, and compiled FlexAttention's kernels.
const char* library_implementation(std::string_view name) {
  if (starts_with(name, "flash_attn::")) return "flash_attn";
  if (starts_with(name, "xformers")) return "xformers";
  if (is_flex(name)) return "flex";
  return nullptr;
}

bool names_backward(std::string_view name) { return contains(name, "backward") || contains(name, "bwd"); }

class Finder {
 public:
  explicit Finder(const Timeline& timeline) : timeline_(timeline), forests_(op_forests(timeline)) {}

  std::vector<AttentionCall> run() {
    for (auto& [track, forest] : forests_) {
      track_ = track;
      forest_ = &forest;
      visit(forest.roots);
    }
    std::sort(calls_.begin(), calls_.end(),
              [](const AttentionCall& a, const AttentionCall& b) { return a.start_ns < b.start_ns; });
    return std::move(calls_);
  }

 private:
  const Op& op(std::size_t i) const { return forest_->ops[i]; }

  // Walks one list of sibling ops: named calls first, then composed sequences; a call's ops are
  // not looked into again.
  void visit(const std::vector<std::size_t>& siblings) {
    for (std::size_t n = 0; n < siblings.size();) {
      const std::size_t i = siblings[n];
      if (std::size_t used = named_call(siblings, n)) {
        n += used;
      } else if (std::size_t used_fwd = composed_forward(siblings, n)) {
        n += used_fwd;
      } else if (std::size_t used_bwd = composed_backward(siblings, n)) {
        n += used_bwd;
      } else {
        visit(op(i).children);
        ++n;
      }
    }
  }

  AttentionCall start_call(AttentionPass pass, std::string implementation, std::string_view name,
                           std::size_t first, std::size_t last) const {
    AttentionCall c;
    c.pass = pass;
    c.implementation = std::move(implementation);
    c.op = std::string(name);
    c.track = track_;
    c.start_ns = op(first).event->ts_ns;
    c.end_ns = op(last).event->end_ns();
    return c;
  }

  // The first op in i's subtree (i included, pre-order) that `match` accepts.
  template <class Match>
  const Op* find_in(std::size_t i, Match match) const {
    if (match(op(i))) return &op(i);
    for (std::size_t c : op(i).children)
      if (const Op* found = find_in(c, match)) return found;
    return nullptr;
  }

  std::size_t named_call(const std::vector<std::size_t>& siblings, std::size_t n) {
    const std::size_t i = siblings[n];
    const Op& root = op(i);
    if (const SdpaOp* sdpa = sdpa_op(root.name)) {
      // The op that names the implementation, and the one whose arguments carry the shapes.
      const Op* impl = find_in(i, [](const Op& o) {
        const SdpaOp* s = sdpa_op(o.name);
        return s && !s->implementation.empty() && starts_with(o.name, "aten::");
      });
      if (!impl) impl = find_in(i, [](const Op& o) {
        const SdpaOp* s = sdpa_op(o.name);
        return s && !s->implementation.empty();
      });
      const SdpaOp* named = impl ? sdpa_op(impl->name) : sdpa;
      std::string implementation(named->implementation.empty() ? "unknown" : named->implementation);
      AttentionCall c = start_call(sdpa->backward ? AttentionPass::backward : AttentionPass::forward,
                                   implementation, root.name, i, i);
      const Op* args = impl && !dims_of(timeline_, *impl->event).empty() ? impl : &root;
      auto dims = dims_of(timeline_, *args->event);
      const std::size_t q = sdpa->backward ? 1 : 0;  // backward ops take grad_out first
      if (dims.size() > q + 1) c.shape = shape_from_qk(dims[q], dims[q + 1]);
      c.dtype = dtype_of(timeline_, *args->event);
      const SdpaOp* args_op = sdpa_op(args->name);
      if (args_op && args_op->causal_arg >= 0) {
        c.causal = concrete_bool(timeline_, *args->event, static_cast<std::size_t>(args_op->causal_arg));
        // is_causal false beside an explicit mask: the mask may be causal, so it is not known
        if (c.causal == false && !sdpa->backward && dims.size() > 3 && !dims[3].empty()) c.causal.reset();
      }
      calls_.push_back(std::move(c));
      return 1;
    }
    const char* library = library_implementation(root.name);
    if (!library) return 0;
    const bool backward = names_backward(root.name);
    // A backward (FlexAttention's: a row-sum kernel, then the gradients) is the run of
    // consecutive sibling ops of the same library and pass.
    std::size_t used = 1;
    while (n + used < siblings.size()) {
      std::string_view next = op(siblings[n + used]).name;
      const char* next_library = library_implementation(next);
      if (!next_library || std::string_view(next_library) != library || names_backward(next) != backward) break;
      ++used;
    }
    AttentionCall c = start_call(backward ? AttentionPass::backward : AttentionPass::forward, library, root.name, i,
                                 siblings[n + used - 1]);
    // The shapes: the first op of the run whose first three inputs are q, k, v of one rank.
    for (std::size_t m = n; m < n + used; ++m) {
      auto dims = dims_of(timeline_, *op(siblings[m]).event);
      if (dims.size() >= 3 && dims[0].size() >= 3 && dims[1].size() == dims[0].size() &&
          dims[2].size() == dims[0].size()) {
        c.shape = shape_from_qk(dims[0], dims[1]);
        c.dtype = dtype_of(timeline_, *op(siblings[m]).event);
        break;
      }
    }
    calls_.push_back(std::move(c));
    return used;
  }

  std::size_t composed_forward(const std::vector<std::size_t>& siblings, std::size_t n);
  std::size_t composed_backward(const std::vector<std::size_t>& siblings, std::size_t n);

  const Timeline& timeline_;
  std::unordered_map<std::uint32_t, Forest> forests_;
  std::uint32_t track_ = 0;
  const Forest* forest_ = nullptr;
  std::vector<AttentionCall> calls_;
};

bool one_of(std::string_view name, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool is_matmul(std::string_view name) { return one_of(name, {"aten::matmul", "aten::bmm", "aten::baddbmm"}); }
bool is_softmax(std::string_view name) {
  return one_of(name, {"aten::softmax", "aten::_softmax", "aten::_safe_softmax"});
}
// What may stand between q·kᵀ and the softmax: the scale, the mask (built or applied), casts.
bool is_score_op(std::string_view name) {
  return one_of(name, {"aten::mul", "aten::mul_", "aten::div", "aten::div_", "aten::masked_fill", "aten::masked_fill_",
                       "aten::add", "aten::add_", "aten::where", "aten::ones", "aten::ones_like", "aten::tril",
                       "aten::triu", "aten::bitwise_not", "aten::logical_not", "aten::full", "aten::zeros",
                       "aten::arange", "aten::eq", "aten::ne", "aten::lt", "aten::gt", "aten::le", "aten::ge",
                       "aten::to", "aten::_to_copy", "aten::slice", "aten::view", "aten::expand", "aten::unsqueeze",
                       "aten::contiguous", "aten::type_as"});
}
// Between the softmax and the matmul by v: dropout and casts.
bool is_probability_op(std::string_view name) {
  return one_of(name, {"aten::dropout", "aten::native_dropout", "aten::feature_dropout", "aten::to", "aten::_to_copy",
                       "aten::type_as"});
}
constexpr std::size_t kMaxComposedOps = 32;

bool last_two(const Dims& d, std::int64_t a, std::int64_t b) {
  return d.size() >= 2 && d[d.size() - 2] == a && d.back() == b;
}

std::size_t Finder::composed_forward(const std::vector<std::size_t>& siblings, std::size_t n) {
  const Op& first = op(siblings[n]);
  if (!is_matmul(first.name)) return 0;
  auto qk = dims_of(timeline_, *first.event);
  if (qk.size() < 2 || qk[0].size() < 3 || qk[1].size() != qk[0].size()) return 0;
  const Dims& q = qk[0];
  const Dims& k = qk[1];
  const std::int64_t s = q[q.size() - 2], d = q.back();
  std::int64_t sk = -1;
  if (k[k.size() - 2] == d) sk = k.back();        // k given transposed: [.., D, Sk]
  else if (k.back() == d) sk = k[k.size() - 2];   // [.., Sk, D], multiplied transposed
  if (sk < 0) return 0;
  bool softmax_seen = false;
  for (std::size_t m = n + 1; m < siblings.size() && m <= n + kMaxComposedOps; ++m) {
    const Op& o = op(siblings[m]);
    if (!softmax_seen) {
      if (is_softmax(o.name)) {
        auto sd = dims_of(timeline_, *o.event);
        if (sd.empty() || !last_two(sd[0], s, sk)) return 0;
        softmax_seen = true;
      } else if (!is_score_op(o.name)) {
        return 0;
      }
      continue;
    }
    if (is_matmul(o.name)) {
      auto pv = dims_of(timeline_, *o.event);
      if (pv.size() < 2 || !last_two(pv[0], s, sk) || pv[1].size() < 2 || pv[1][pv[1].size() - 2] != sk) return 0;
      AttentionCall c = start_call(AttentionPass::forward, "composed", first.name, siblings[n], siblings[m]);
      c.shape = shape_from_qk(q, k);
      c.shape.seq_k = sk;
      c.dtype = dtype_of(timeline_, *first.event);
      calls_.push_back(std::move(c));
      return m - n + 1;
    }
    if (!is_probability_op(o.name)) return 0;
  }
  return 0;
}

bool is_matmul_backward(std::string_view node) {
  return one_of(node, {"BmmBackward0", "MmBackward0", "MatmulBackward0", "BaddbmmBackward0"});
}
bool is_softmax_backward(std::string_view node) { return one_of(node, {"SoftmaxBackward0", "SafeSoftmaxBackward0"}); }
// Autograd nodes of the reshapes, casts and dropout around the softmax's backward.
bool is_glue_backward(std::string_view node) {
  return one_of(node, {"ViewBackward0", "ExpandBackward0", "ToCopyBackward0", "UnsafeViewBackward0", "CloneBackward0",
                       "NativeDropoutBackward0", "ReshapeAliasBackward0", "TransposeBackward0"});
}
bool is_score_backward(std::string_view node) {
  return is_glue_backward(node) ||
         one_of(node, {"MaskedFillBackward0", "MulBackward0", "DivBackward0", "AddBackward0", "WhereBackward0"});
}

std::size_t Finder::composed_backward(const std::vector<std::size_t>& siblings, std::size_t n) {
  // Starts at a matmul's backward node followed (through glue) by a softmax's backward node.
  if (!is_matmul_backward(op(siblings[n]).name)) return 0;
  std::size_t m = n + 1;
  while (m < siblings.size() && m <= n + kMaxComposedOps && is_glue_backward(op(siblings[m]).name)) ++m;
  if (m >= siblings.size() || !is_softmax_backward(op(siblings[m]).name)) return 0;
  // The node's inputs are on the node op itself (under the evaluate_function range, when present).
  auto node_dims = [&](std::size_t i) {
    const Op& o = op(i);
    if (!o.event->inputs && !o.children.empty()) return dims_of(timeline_, *op(o.children.front()).event);
    return dims_of(timeline_, *o.event);
  };
  auto node_event = [&](std::size_t i) -> const TimelineEvent& {
    const Op& o = op(i);
    return !o.event->inputs && !o.children.empty() ? *op(o.children.front()).event : *o.event;
  };
  const std::size_t softmax = m;
  auto grad = node_dims(siblings[softmax]);
  if (grad.empty() || grad[0].size() < 3) return 0;
  std::size_t end = softmax + 1;
  while (end < siblings.size() && end <= n + kMaxComposedOps && is_score_backward(op(siblings[end]).name)) ++end;
  if (end >= siblings.size() || !is_matmul_backward(op(siblings[end]).name)) return 0;
  const Dims& scores = grad[0];
  AttentionCall c = start_call(AttentionPass::backward, "composed", op(siblings[softmax]).name, siblings[n],
                               siblings[end]);
  c.shape.seq_q = scores[scores.size() - 2];
  c.shape.seq_k = scores.back();
  if (scores.size() == 4) {
    c.shape.batch = scores[0];
    c.shape.heads = scores[1];
    c.shape.kv_heads = scores[1];
  }
  auto out_grad = node_dims(siblings[n]);  // the gradient of p·v: [.., Sq, Dv]
  if (!out_grad.empty() && out_grad[0].size() >= 2) c.shape.head_dim = out_grad[0].back();
  c.dtype = dtype_of(timeline_, node_event(siblings[n]));  // the softmax may run in fp32 (autocast)
  calls_.push_back(std::move(c));
  return end - n + 1;
}

// Adds each call's GPU work: the device events of the launches its thread made inside it. Returns
// each call's device intervals (by call index), which its device_time_ns covers.
std::vector<std::vector<Interval>> attach_device_work(const Timeline& timeline, std::vector<AttentionCall>& calls) {
  std::vector<std::vector<Interval>> intervals(calls.size());
  std::unordered_map<std::uint32_t, std::vector<const TimelineEvent*>> launches;  // per track, by start
  std::unordered_multimap<std::int64_t, const TimelineEvent*> device;            // by correlation
  for (const TimelineEvent& e : timeline.events()) {
    if ((e.category == Category::cuda_runtime || e.category == Category::cuda_driver) && e.correlation >= 0)
      launches[e.track].push_back(&e);
    else if (is_device_work(e.category) && e.correlation >= 0)
      device.emplace(e.correlation, &e);
  }
  for (auto& [track, list] : launches)
    std::stable_sort(list.begin(), list.end(),
                     [](const TimelineEvent* a, const TimelineEvent* b) { return a->ts_ns < b->ts_ns; });
  for (std::size_t i = 0; i < calls.size(); ++i) {
    AttentionCall& c = calls[i];
    auto it = launches.find(c.track);
    if (it == launches.end()) continue;
    const auto& list = it->second;
    auto first = std::lower_bound(list.begin(), list.end(), c.start_ns,
                                  [](const TimelineEvent* e, std::int64_t t) { return e->ts_ns < t; });
    std::unordered_set<std::int64_t> seen;
    for (auto l = first; l != list.end() && (*l)->ts_ns <= c.end_ns; ++l) {
      if (!seen.insert((*l)->correlation).second) continue;
      auto [lo, hi] = device.equal_range((*l)->correlation);
      for (auto d = lo; d != hi; ++d) {
        const TimelineEvent& e = *d->second;
        switch (e.category) {
          case Category::kernel: {
            ++c.kernels;
            const std::string& name = timeline.name(e);
            if (std::find(c.kernel_names.begin(), c.kernel_names.end(), name) == c.kernel_names.end())
              c.kernel_names.push_back(name);
            break;
          }
          case Category::gpu_memcpy: ++c.memcpy; break;
          case Category::gpu_memset: ++c.memset; break;
          default: break;
        }
        intervals[i].push_back(Interval{e.ts_ns, e.end_ns()});
      }
    }
    c.device_time_ns = union_ns(intervals[i]);
  }
  return intervals;
}

std::vector<Interval>& append(std::vector<Interval>& to, const std::vector<Interval>& from) {
  to.insert(to.end(), from.begin(), from.end());
  return to;
}

}  // namespace

const char* pass_name(AttentionPass pass) { return pass == AttentionPass::forward ? "forward" : "backward"; }

std::string implementation_label(const std::string& implementation) {
  if (implementation == "cudnn") return "cuDNN";
  if (implementation == "flex") return "FlexAttention";
  if (implementation == "flash_attn") return "flash-attn";
  return implementation;
}

AttentionSummary find_attention(const Timeline& timeline) {
  AttentionSummary out;
  out.calls = Finder(timeline).run();
  const std::vector<std::vector<Interval>> call_intervals = attach_device_work(timeline, out.calls);
  std::vector<Interval> forward, backward;  // every call's, for the whole trace
  for (std::size_t i = 0; i < out.calls.size(); ++i)
    append(out.calls[i].pass == AttentionPass::forward ? forward : backward, call_intervals[i]);
  out.forward_device_time_ns = union_ns(forward);
  out.backward_device_time_ns = union_ns(backward);
  out.attention_device_time_ns = union_ns(append(forward, backward));
  for (StepSummary& s : summarize_steps(timeline)) {
    AttentionStep st;
    st.name = s.name;
    std::vector<Interval> step_forward, step_backward;
    for (std::size_t i = 0; i < out.calls.size(); ++i) {
      AttentionCall& c = out.calls[i];
      if (c.step >= 0 || c.start_ns < s.start_ns || c.start_ns > s.end_ns) continue;
      c.step = static_cast<long>(out.steps.size());
      if (c.pass == AttentionPass::forward) {
        ++st.forward_calls;
        append(step_forward, call_intervals[i]);
      } else {
        ++st.backward_calls;
        append(step_backward, call_intervals[i]);
      }
    }
    st.forward_device_time_ns = union_ns(step_forward);
    st.backward_device_time_ns = union_ns(step_backward);
    std::vector<Interval>& attention = append(step_forward, step_backward);
    st.attention_device_time_ns = union_ns(attention);
    // The step's work by launch, with its calls' work: a call that starts in the step but launches
    // after the step's range ended still counts in it, so the share stays at most 1.
    st.device_time_ns = union_ns(append(s.device_intervals, attention));
    out.steps.push_back(std::move(st));
  }
  return out;
}

}  // namespace attnprof::report
