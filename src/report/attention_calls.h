#pragma once
// Attention calls in any Kineto trace (PyTorch's or attnprof's), forward and backward.
//
// A call is found from the CPU ops a thread ran, by the op's name or by a composed sequence:
//   - SDPA: the outermost aten::scaled_dot_product_attention family op; its implementation from the
//     backend op inside it (_scaled_dot_product_{cudnn,flash,efficient}_attention, ..._math);
//     backward: the ScaledDotProduct{Cudnn,Flash,Efficient,...}AttentionBackward0 autograd node;
//   - library ops: flash_attn::*, xformers*::* (forward or backward by name);
//   - compiled FlexAttention: the ops that launch Triton kernels named *flex_attention* (a backward
//     is the consecutive *flex_attention_backward* ops of one autograd node);
//   - composed: on one thread, matmul of [.., S, D] by [.., D, S'] (or by [.., S', D] transposed)
//     → optional scale, mask building, masked_fill/add → softmax over [.., S, S'] → optional
//     dropout → matmul of [.., S, S'] by [.., S', Dv]; backward: the autograd nodes from the
//     BmmBackward0 before a SoftmaxBackward0 over [.., S, S'] to the BmmBackward0 after it.
// A call's GPU work is every kernel, memcpy and memset whose launch (runtime or driver call, by
// correlation id) ran on the call's thread inside the call's time range. Every GPU time here is
// the union of the work's [start, end) intervals (report/interval_union.h): kernels that overlap
// in time (programmatic dependent launch, several streams) count their shared time once.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report/interval_union.h"
#include "report/timeline.h"

namespace attnprof::report {

enum class AttentionPass { forward, backward };
const char* pass_name(AttentionPass pass);  // "forward", "backward"

struct AttentionShape {
  std::optional<std::int64_t> batch, heads, kv_heads, seq_q, seq_k, head_dim;
};

struct AttentionCall {
  AttentionPass pass = AttentionPass::forward;
  // cudnn, flash, efficient, math, flex, flash_attn, xformers, composed, unknown
  std::string implementation;
  std::string op;                      // the op (or autograd node) that names the call
  AttentionShape shape;                // from the recorded input shapes; empty when not recorded
  std::string dtype;                   // bf16, fp16, fp32, fp64; "" when not recorded
  std::optional<bool> causal;          // when the recorded arguments say
  std::uint32_t track = 0;
  std::int64_t start_ns = 0, end_ns = 0;  // the host range
  std::int64_t kernels = 0, memcpy = 0, memset = 0;
  std::int64_t device_time_ns = 0;     // union of its kernels', memcpys' and memsets' intervals
  std::vector<std::string> kernel_names;  // distinct, in launch order
  long step = -1;                      // index into AttentionSummary::steps; -1: outside every step
};

struct AttentionStep {
  std::string name;
  // The step's GPU time: every kernel, memcpy and memset it launched (report/steps.h) and its
  // attention calls' work, as one union; at least attention_device_time_ns.
  std::int64_t device_time_ns = 0;
  std::int64_t attention_device_time_ns = 0;  // the union over its attention calls' work
  std::int64_t forward_calls = 0, backward_calls = 0;
  // The union over its forward calls' work, and over its backward calls'; they may overlap each
  // other, so together they can exceed attention_device_time_ns.
  std::int64_t forward_device_time_ns = 0, backward_device_time_ns = 0;
  double share() const {
    return device_time_ns > 0 ? static_cast<double>(attention_device_time_ns) / device_time_ns : 0.0;
  }
};

struct AttentionSummary {
  std::vector<AttentionCall> calls;  // in host start order
  std::vector<AttentionStep> steps;  // one per ProfilerStep#N, in time order
  // Over every call, inside a step or not (a trace without ProfilerStep#N ranges): the unions as in
  // AttentionStep.
  std::int64_t attention_device_time_ns = 0, forward_device_time_ns = 0, backward_device_time_ns = 0;
};

AttentionSummary find_attention(const Timeline& timeline);

// "cuDNN", "flash", "FlexAttention", ...: the implementation as the text output names it.
std::string implementation_label(const std::string& implementation);

}  // namespace attnprof::report
