// The backward's insights: probabilities_kept, scores_recomputed, dkdv_reduction
// (report/backward_insights.h).
#include "report/backward_insights.h"

#include <attnprof/dtype.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "report/insight_parts.h"
#include "report/named_ranges.h"
#include "report/occupancy.h"

namespace attnprof::report {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

bool contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

double d(std::int64_t v) { return static_cast<double>(v); }

// What one backward's figures are counted over: a step (attn_bwd) or a call (a model's trace).
const char* unit(const BackwardScope& scope) { return scope.ranges ? "per step" : "per call"; }

// ", 4 calls per step: 32.0 MiB per step" for a model's calls, "" for attn_bwd ranges.
std::string per_step_total(const BackwardScope& scope, double bytes_per_call) {
  if (scope.ranges || scope.steps <= 0 || scope.work.forwards.empty()) return {};
  const double calls = d(static_cast<std::int64_t>(scope.work.forwards.size())) / scope.steps;
  return fmt::format(" ({} calls per step: {} per step)", format_percent(calls), format_bytes(bytes_per_call * calls));
}

// A softmax backward: the op PyTorch's SoftmaxBackward0 runs, a fused softmax-backward op (ours,
// torch.compile's), or their kernels. FlexAttention's fused backward is not one.
bool is_softmax_backward(const std::string& name) {
  const std::string n = lower(name);
  return contains(n, "softmax_backward") && !contains(n, "flex_attention");
}

// The ops of a FlashAttention-style backward, which recompute the scores from the saved LSE.
bool is_flash_style_backward_op(const std::string& name) {
  static const std::set<std::string> kOps = {
      "aten::_flash_attention_backward",
      "aten::_efficient_attention_backward",
      "aten::_scaled_dot_product_flash_attention_backward",
      "aten::_scaled_dot_product_efficient_attention_backward",
      "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
      "aten::_scaled_dot_product_cudnn_attention_backward",
      "aten::_cudnn_attention_backward"};
  if (kOps.count(name)) return true;
  return name.rfind("flash_attn::", 0) == 0 && (contains(name, "backward") || contains(name, "bwd"));
}

// The kernels whose dK/dV group reduction is known: attnprof's CPU FlashAttention-2 backward
// (src/cpu/attention_backward_tiles.h: a work item owns a key block's dK/dV rows and adds the
// group's query heads in a fixed order; no atomics).
bool is_known_fixed_order_backward(const std::string& name) {
  return name.rfind("cpu::flash_attention_backward", 0) == 0 || name.rfind("cpu::efficient_attention_backward", 0) == 0;
}

bool is_group_sum(const WorkItem& w) {
  if (contains(w.event->name, "sum_head_groups")) return true;
  return std::any_of(w.ops.begin(), w.ops.end(),
                     [](const trace::Event* op) { return op->name == "aten::sum" || op->name == "aten::sum_out"; });
}

// "ExpandBackward0 › aten::sum": the sum op under the autograd node that ran it (the engine's
// "evaluate_function" wrapper left out), else the kernel.
std::string sum_label(const WorkItem& w) {
  const auto sum = std::find_if(w.ops.begin(), w.ops.end(),
                                [](const trace::Event* op) { return op->name == "aten::sum" || op->name == "aten::sum_out"; });
  if (sum == w.ops.end()) return short_kernel_name(w.event->name, 60);
  const auto node = std::find_if(sum + 1, w.ops.end(), [](const trace::Event* op) {
    return op->name.rfind("autograd::engine::", 0) != 0 && op->name.rfind("aten::", 0) != 0;
  });
  return node == w.ops.end() ? (*sum)->name : (*node)->name + " › " + (*sum)->name;
}

// The recorded dims of one input of an op ([] when not recorded or not a list of integers).
std::vector<std::int64_t> input_dims(const trace::Event& op, std::size_t input) {
  const nlohmann::json dims = nlohmann::json::parse(op.input_dims, nullptr, /*allow_exceptions=*/false);
  std::vector<std::int64_t> out;
  if (!dims.is_array() || dims.size() <= input || !dims[input].is_array()) return out;
  for (const auto& v : dims[input]) {
    if (!v.is_number_integer() || v.get<std::int64_t>() <= 0) return {};
    out.push_back(v.get<std::int64_t>());
  }
  return out;
}

std::optional<DType> input_dtype(const trace::Event& op, std::size_t input) {
  const nlohmann::json types = nlohmann::json::parse(op.input_types, nullptr, false);
  if (!types.is_array() || types.size() <= input || !types[input].is_string()) return std::nullopt;
  return dtype_from_type_name(types[input].get<std::string>());
}

std::string joined_dims(const std::vector<std::int64_t>& dims, std::size_t count) {
  std::string out;
  for (std::size_t i = 0; i < count; ++i) out += (i ? "·" : "") + std::to_string(dims[i]);
  return out;
}

}  // namespace

std::string format_flop_count(double flops) {
  if (flops >= 1e12) return fmt::format("{:.2f} TFLOP", flops / 1e12);
  if (flops >= 1e9) return fmt::format("{:.2f} GFLOP", flops / 1e9);
  if (flops >= 1e6) return fmt::format("{:.2f} MFLOP", flops / 1e6);
  return group_digits(static_cast<std::int64_t>(flops)) + " FLOP";
}

BackwardScope backward_scope(const trace::Trace& trace, const RunFacts& facts) {
  static const std::vector<std::string> kBackwardRange = {"attn_bwd"};
  BackwardScope scope;
  scope.work = collect_forwards(trace, kBackwardRange);
  const auto& first = scope.work.forwards;
  scope.ranges = !first.empty() && first.front().range != nullptr &&
                 is_named_range(first.front().range->category, first.front().range->name, kBackwardRange);
  if (scope.ranges) {
    // The shape: the run's, else the first op of the forwards whose inputs are q and k (or kᵀ).
    scope.spec = facts.spec;
    scope.causal_known = facts.spec.has_value();
    if (!scope.spec) scope.spec = spec_from_trace(trace, collect_forwards(trace));
    if (!scope.spec) scope.spec = spec_from_trace(trace, scope.work);
    return scope;
  }
  FoundCalls calls = attention_call_windows(trace, AttentionPass::backward);
  scope.work = collect_windows(trace, calls.windows);
  scope.steps = calls.steps;
  scope.spec = facts.spec ? facts.spec : calls.spec;
  scope.causal_known = facts.spec ? true : calls.causal_known;
  return scope;
}

namespace rules {

std::optional<Insight> probabilities_kept(const BackwardScope& scope) {
  const trace::Event* op = nullptr;  // the first softmax backward op with its shape recorded
  std::string label;
  std::vector<std::string> calls, kernels;
  for (const Forward& f : scope.work.forwards) {
    bool here = false;
    for (const WorkItem& w : f.work) {
      const auto at = std::find_if(w.ops.begin(), w.ops.end(), [](const trace::Event* o) { return is_softmax_backward(o->name); });
      if (at == w.ops.end() && !is_softmax_backward(w.event->name)) continue;
      here = true;
      add_unique(kernels, w.event->name);
      if (label.empty()) label = at != w.ops.end() ? (*at)->name : short_kernel_name(w.event->name, 60);
      if (!op && at != w.ops.end() && input_dims(**at, 1).size() >= 2 && input_dtype(**at, 1)) op = *at;
    }
    if (here) add_call(calls, f);
  }
  if (calls.empty()) return std::nullopt;
  std::string text = label + " reads the S×S probabilities the forward kept";
  if (op) {
    // Its inputs are (grad_output, output): the output is the probabilities, [.., Sq, Sk].
    const std::vector<std::int64_t> dims = input_dims(*op, 1);
    const DType dtype = *input_dtype(*op, 1);
    const double element = d(dtype_size(dtype));
    double elements = 1;
    for (std::int64_t v : dims) elements *= d(v);
    const double probs = elements * element;
    const double lse = elements / d(dims.back()) * 4.0;
    text += fmt::format(" ({}): {}·{:.0f} B = {} kept from the forward {}{}; a fused backward keeps only the fp32 "
                        "log-sum-exp per query row, {}·4 B = {} ({:.0f}× less)",
                        dtype_name(dtype), joined_dims(dims, dims.size()), element, format_bytes(probs), unit(scope),
                        per_step_total(scope, probs), joined_dims(dims, dims.size() - 1), format_bytes(lse),
                        probs / lse);
  } else {
    text += "; a fused backward keeps only the fp32 log-sum-exp per query row";
  }
  return Insight{"probabilities_kept", text, about_of(calls, kernels)};
}

std::optional<Insight> scores_recomputed(const BackwardScope& scope) {
  std::string label;
  std::vector<std::string> calls, kernels;
  for (const Forward& f : scope.work.forwards) {
    bool here = false;
    for (const WorkItem& w : f.work) {
      // The outermost such op names the call (…cudnn_attention_backward over _cudnn_attention_backward).
      const auto at = std::find_if(w.ops.rbegin(), w.ops.rend(), [](const trace::Event* o) { return is_flash_style_backward_op(o->name); });
      if (at == w.ops.rend()) continue;
      here = true;
      add_unique(kernels, w.event->name);
      if (label.empty()) label = (*at)->name;
    }
    if (here) add_call(calls, f);
  }
  if (calls.empty()) return std::nullopt;
  std::string text = label + " recomputes the scores S = Q·Kᵀ from Q, K and the forward's log-sum-exp";
  if (scope.spec) {
    const AttentionSpec& s = *scope.spec;
    const std::string pairs = fmt::format("{}·{}·{}·{}", s.batch, s.heads, s.seq_q, s.seq_k);
    // Q·Kᵀ over the pairs the mask leaves visible (2 FLOP each per head-dim element); with the mask
    // not recorded (a trace of ours read back), over every pair.
    const bool causal = scope.causal_known && s.causal;
    AttentionSpec counted = s;
    counted.causal = causal;
    const double visible = counted.visible_pairs();
    const std::string mask =
        !scope.causal_known ? " (fewer with a causal mask)"
        : !causal           ? ""
                            : fmt::format(", over the {:.0f} of {} pairs the causal mask leaves visible", visible,
                                          s.seq_q * s.seq_k);
    const double recompute = 2.0 * d(s.batch) * d(s.heads) * d(s.head_dim) * visible;
    const double element = d(dtype_size(s.dtype));
    const double probs = d(s.batch) * d(s.heads) * d(s.seq_q) * d(s.seq_k) * element;
    const double lse = d(s.batch) * d(s.heads) * d(s.seq_q) * 4.0;
    text += fmt::format(": 2·B·H·Sq·Sk·D = 2·{}·{} FLOP{} = {} {}, one of the backward's five S×S×D GEMMs (20% of its {}, "
                        "2.5× the forward's); in exchange no S×S probabilities are kept, B·H·Sq·Sk·{:.0f} B = "
                        "{}·{:.0f} B = {} {}, only the fp32 log-sum-exp, B·H·Sq·4 B = {}",
                        pairs, s.head_dim, mask, format_flop_count(recompute), unit(scope),
                        format_flop_count(5.0 * recompute), element, pairs, element, format_bytes(probs), unit(scope),
                        format_bytes(lse));
  }
  return Insight{"scores_recomputed", text, about_of(calls, kernels)};
}

std::optional<Insight> dkdv_reduction(const BackwardScope& scope) {
  if (!scope.spec || scope.spec->kv_heads <= 0 || scope.spec->heads <= scope.spec->kv_heads) return std::nullopt;
  const std::int64_t group = scope.spec->heads / scope.spec->kv_heads;
  std::vector<std::string> calls, kernels, sum_labels;
  const std::string* fixed_order = nullptr;
  double sum_ns = 0, total_ns = 0;
  int sums = 0;
  for (const Forward& f : scope.work.forwards) {
    total_ns += d(f.work_ns);
    bool here = false;
    for (const WorkItem& w : f.work) {
      if (is_group_sum(w)) {
        ++sums;
        sum_ns += d(w.event->dur_ns);
        add_unique(sum_labels, sum_label(w));
      } else if (is_known_fixed_order_backward(w.event->name)) {
        if (!fixed_order) fixed_order = &w.event->name;
      } else {
        continue;
      }
      here = true;
      add_unique(kernels, w.event->name);
    }
    if (here) add_call(calls, f);
  }
  if (calls.empty()) return std::nullopt;
  const double n = forwards_count(scope.work);
  std::vector<std::string> parts;
  if (sums > 0) {
    parts.push_back(fmt::format("dK and dV are computed per query head, then summed over each group ({}: {} {}, {} {}, "
                                "{}% of the backward's work)",
                                join(sum_labels, "; "), format_percent(sums / n), unit(scope),
                                format_duration_ns(sum_ns / n), unit(scope),
                                format_percent(total_ns > 0 ? 100.0 * sum_ns / total_ns : 0.0)));
  }
  if (fixed_order) {
    parts.push_back(fmt::format("{} sums dK and dV over the group's query heads inside the kernel: each work item owns "
                                "a block of keys' dK and dV rows and adds the heads in a fixed order, without atomics "
                                "(the same inputs and threads give the same bits)",
                                short_kernel_name(*fixed_order, 60)));
  }
  return Insight{"dkdv_reduction",
                 fmt::format("GQA, {} query heads per kv head ({} → {}): {}", group, scope.spec->heads,
                             scope.spec->kv_heads, join(parts, "; ")),
                 about_of(calls, kernels)};
}

}  // namespace rules

std::vector<Insight> derive_backward_insights(const trace::Trace& trace, const RunFacts& facts) {
  const BackwardScope scope = backward_scope(trace, facts);
  std::vector<Insight> out;
  if (scope.work.forwards.empty()) return out;
  for (auto insight : {rules::probabilities_kept(scope), rules::scores_recomputed(scope), rules::dkdv_reduction(scope)})
    if (insight) out.push_back(std::move(*insight));
  return out;
}

}  // namespace attnprof::report
