#pragma once
// "What the trace revealed": rules over a Trace (plus facts of the run), each with a stable code.
// Rules look at kernel names, launch APIs, footprints, op chains and sizes — never at a
// variant's name — so they apply to any trace, PyTorch's included. docs/insights.md lists them.
#include <attnprof/attention.h>
#include <attnprof/trace.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/bytes_text.h"
#include "report/attention_calls.h"
#include "report/forward_work.h"

namespace attnprof::report {

struct Insight {
  std::string code;  // hidden_copy, fp32_gemm_cuda_cores, mask_rebuilt, safe_softmax, s2_materialized,
                     // single_fused_kernel, low_occupancy_by_design, low_occupancy, occupancy_recorded_zero,
                     // warp_specialized, split_kv_decode, probabilities_kept, scores_recomputed,
                     // dkdv_reduction (the backward's: backward_insights.h), cpu_bound, nan_output,
                     // one_time_setup (from the run, not the trace), above_ceiling and decode_bandwidth
                     // (from the ceilings)
  std::string text;
  // What it is about: the calls (the ranges or attention calls it read, by name) and the kernels
  // (full names) it speaks of. Empty only for the run's own facts (nan_output, one_time_setup).
  std::vector<std::string> about;
};

// What the run knew beyond the trace; every field may be missing (a trace given to `inspect`).
struct RunFacts {
  std::optional<AttentionSpec> spec;           // B·H·Sq·Sk and the element size for s2_materialized
  std::optional<std::int64_t> peak_extra_bytes;
  std::optional<double> cpu_ns_per_forward;    // else the forward ranges' average
  std::optional<double> device_ns_per_forward; // else the GPU's busy time per forward (Forward::busy_ns)
  bool nan_output = false;
  std::int64_t masked_rows = 0;        // rows that see no key (causal bottom-right, Sq > Sk)
  std::int64_t masked_rows_nan = 0;    // of them, all NaN
  bool nan_only_in_masked_rows = false;  // the NaN PyTorch's naive module gives too, nothing else
  std::optional<int> forwards;                 // forwards the numbers average over
};

// Every rule, in a fixed order (the backward's after the forward's). Codes appear at most once.
std::vector<Insight> derive_insights(const trace::Trace& trace, const RunFacts& facts);
// The same, with the ranges of these names (inspect --range) in place of attn_fwd.
std::vector<Insight> derive_insights(const trace::Trace& trace, const RunFacts& facts,
                                     const std::vector<std::string>& range_names);

// The rules one by one (tests call them directly; derive_insights runs them all).
namespace rules {
std::optional<Insight> hidden_copy(const TraceWork& work);
std::optional<Insight> fp32_gemm_cuda_cores(const TraceWork& work);
std::optional<Insight> mask_rebuilt(const TraceWork& work);
std::optional<Insight> safe_softmax(const TraceWork& work);
std::optional<Insight> s2_materialized(const TraceWork& work, const RunFacts& facts);
std::optional<Insight> single_fused_kernel(const TraceWork& work);
// Low occupancy of kernels whose design is known (known_kernel_design) and of the others: the same
// arithmetic, but only the first says it is the design.
std::optional<Insight> low_occupancy_by_design(const trace::Trace& trace, const TraceWork& work);
std::optional<Insight> low_occupancy(const trace::Trace& trace, const TraceWork& work);
// Kernels whose recorded "est. achieved occupancy %" is 0, with why Kineto wrote 0 (a block over
// the 48 KiB default its calculator assumes, or a grid whose figure rounds below 0.5%: see
// report/recorded_occupancy.h) and our estimate, capped by a grid under one wave.
std::optional<Insight> occupancy_recorded_zero(const trace::Trace& trace, const TraceWork& work);
// A Hopper attention kernel of several 128-thread warpgroups (FA3-style warp specialisation): the
// registers per thread the trace shows are the launch's average that setmaxnreg redistributes.
std::optional<Insight> warp_specialized(const trace::Trace& trace, const TraceWork& work);
// Split-KV decoding (few query rows, keys split across CTAs, partial outputs merged by their LSE):
// an attention kernel named splitkv/split_kv (attnprof's flash_decode_splitkv_kernel,
// FlashAttention 2's flash_fwd_splitkv_kernel) — the split count from its grid's y where that grid
// is known (both of those), its combine kernel and share of the forward (attnprof's merges inside
// the split kernel: no combine kernel), and with the shape the
// K/V bytes read per forward and their rate (decode_kv_bytes).
std::optional<Insight> split_kv_decode(const TraceWork& work, const RunFacts& facts);
std::optional<Insight> cpu_bound(const TraceWork& work, const RunFacts& facts);
std::optional<Insight> nan_output(const RunFacts& facts);
// A run's one-time setup (Variant::prepare, RunResult::setup_ns) when it reaches
// kNotableSetupNs: named, with how many forwards' device time it equals, since no per-forward
// number shows it.
std::optional<Insight> one_time_setup(double setup_ns, double device_ns_per_forward);
}  // namespace rules

inline constexpr double kNotableSetupNs = 1e6;  // 1 ms

// Why a kernel's occupancy is low by design, for the kernels whose design is known: attnprof's own
// attention kernels, cuDNN's fused attention, FlashAttention (2 and 3, PyTorch's copy included),
// CUTLASS memory-efficient attention and cuBLAS's nvjet GEMMs; nullopt for any other kernel.
std::optional<std::string> known_kernel_design(const std::string& kernel_name);

// The K and V bytes a forward of this shape must read: 2 · B · Hkv · keys · D · element size, with
// keys those the last query row sees (all of seq_k unless causal).
double decode_kv_bytes(const AttentionSpec& spec);

// Occupancy at or below this is "low" (a quarter of the SM's warps).
inline constexpr double kLowOccupancyPercent = 25.0;

// The attention shape a trace recorded (record_shapes): from the first op of a forward whose first
// two inputs are 4-D — q [B,H,Sq,D] and k [B,Hkv,Sk,D] (or kᵀ [B,Hkv,D,Sk]) — and the dtype from
// its input types. nullopt when the trace has no shapes. derive_insights uses it when the run's
// facts carry no spec (a trace given to `inspect`).
std::optional<AttentionSpec> spec_from_trace(const trace::Trace& trace, const TraceWork& work);

// "c10::BFloat16", "bf16", "float", ...: the dtype a trace's recorded input type names; nullopt for
// any other type.
std::optional<DType> dtype_from_type_name(const std::string& name);

// The attention calls of one pass found in a trace (report/attention_calls.h) as work windows, with
// the shape of the first call whose shape was recorded whole (causal from its recorded argument:
// causal_known) and the number of profiler steps the calls fall in (0 when outside every step).
struct FoundCalls {
  std::vector<WorkWindow> windows;
  std::optional<AttentionSpec> spec;
  bool causal_known = false;
  int steps = 0;
};
FoundCalls attention_call_windows(const trace::Trace& trace, AttentionPass pass);

// Peak bytes above the forward's starting allocation, from the trace's [memory] events; nullopt
// when the trace has none inside a forward.
std::optional<std::int64_t> peak_extra_from_memory_events(const trace::Trace& trace, const TraceWork& work);

// "what the trace revealed:" and one wrapped "- code: text" paragraph per insight ("" when none);
// an "about:" line follows when the text does not name everything the insight is about.
std::string insights_text(const std::vector<Insight>& insights, std::size_t width = 100);
// [{"code": ..., "text": ..., "about": [...]}, ...]
nlohmann::json insights_json(const std::vector<Insight>& insights);

// "93.7 µs", "1.08 ms", "2.31 s"
std::string format_duration_ns(double ns);
using attnprof::format_bytes;  // core/bytes_text.h
// A compute rate, in the one unit every command prints it in: "12.3", "0.45", "0.0123" (TFLOP/s)
std::string tflops_number(double tflops);
// "12.3 TFLOP/s"
std::string format_tflops(double tflops);

}  // namespace attnprof::report
