#pragma once
// What another attention variant would save in a trace (`inspect --what-if`): the trace's forward
// attention calls grouped by distinct shape, attnprof's variants measured at those shapes, and each
// step's time projected with every forward call's time replaced by the variant's median at its
// shape. Running the variants is src/run/what_if_run's job; this file holds the data, the
// arithmetic and their text and JSON.
//
// Times: on a GPU trace, GPU time, the union of the work's intervals (report/interval_union.h): a
// step's kernels, memcpys and memsets, its forward (or backward) calls' work, a variant's kernels
// per forward; on a CPU trace, host wall time (the ProfilerStep range, the calls' op ranges summed,
// the variant's attn_fwd range).
#include <attnprof/attention.h>
#include <attnprof/time_stats.h>

#include <cstdint>
#include <string>
#include <vector>

#include "report/attention_calls.h"
#include "report/steps.h"

namespace attnprof::report {

// One distinct forward shape among the calls inside steps, as a variant runs it.
struct WhatIfShape {
  AttentionSpec spec;           // the device is the trace's; q, k, v contiguous [B, H, S, D]
  std::string label;            // "8x4x256x64 bf16 causal"
  bool causal_assumed = false;  // the trace does not say: run non-causal
  std::string not_runnable;     // non-empty: what the trace did not record, so nothing ran here
  std::int64_t calls = 0;       // forward calls at this shape inside steps
};

// One variant at one shape: its time per forward (ns), or why it did not run.
struct WhatIfMeasure {
  TimeStats time;  // count 0 when it did not run
  std::string refusal;
};

// One step of the trace: its time and the forward calls a variant replaces.
struct WhatIfStep {
  std::string name;
  std::int64_t step_ns = 0;
  std::int64_t forward_ns = 0;   // its forward calls' time, the part replaced (AttentionStep's on a GPU trace)
  std::int64_t backward_ns = 0;  // its backward calls' time, kept as measured
  std::vector<std::size_t> forward_shapes;  // per forward call, its index into WhatIf::shapes
};

struct WhatIf {
  std::string why_not;  // non-empty: nothing ran, and this one line says why
  Device device = Device::cpu;
  std::string where;          // "this machine's CPU", "this machine's NVIDIA H200": set by the runner
  std::string forward_label;  // "cuDNN forward attention", "composed forward attention"
  std::vector<WhatIfStep> steps;
  std::vector<WhatIfShape> shapes;
  std::vector<std::string> variants;
  std::vector<std::vector<WhatIfMeasure>> measures;  // [shape][variant], filled by the runner
  std::vector<std::string> assumptions;
  std::size_t runnable_shapes() const;
};

// The trace's side: its steps, their forward calls grouped by distinct shape, and what the
// projection assumes. `device` is where the trace ran (it picks the times, as above). Sets why_not
// when there is nothing to replace (no ProfilerStep#N range, no forward call inside one).
// `steps` are summarize_steps' of the timeline `summary` was found in (one per summary step).
WhatIf plan_what_if(const AttentionSummary& summary, const std::vector<StepSummary>& steps, Device device);

// One step projected for one variant (ns).
struct WhatIfStepProjection {
  std::string name;
  double step_ns = 0, replaced_ns = 0, projected_ns = 0;
  double variant_ns = 0, variant_min_ns = 0, variant_max_ns = 0;  // Σ over its calls of median, min, max
};

// One variant over the steps: each step projected, and their means (ns).
struct WhatIfProjection {
  std::string variant;
  std::string not_projected;  // non-empty: a call's shape it did not run at, and why
  std::vector<WhatIfStepProjection> steps;
  double step_ns = 0, replaced_ns = 0, projected_ns = 0, projected_min_ns = 0, projected_max_ns = 0;
  double variant_ns = 0, variant_min_ns = 0, variant_max_ns = 0;
};

// Per variant: projected step = step − its forward calls' time + Σ the variant's median at each
// call's shape (min and max likewise give the spread).
std::vector<WhatIfProjection> project_what_if(const WhatIf& what_if);

// The text block (one line when why_not is set) and the JSON object "what_if".
std::string what_if_text(const WhatIf& what_if);
std::string what_if_json(const WhatIf& what_if);

}  // namespace attnprof::report
