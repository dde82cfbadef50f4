#pragma once
// The passes of a run (RunOptions::pass): the tensors a pass needs, the ranges each profiled step
// records, what one measured pass is in a trace, its wall-clock time and peak memory, and the
// gradient check and dump of a backward.
#include <attnprof/attention.h>
#include <attnprof/result.h>
#include <attnprof/variant.h>

#include <cstdint>
#include <optional>
#include <string>

#include "ops/backend.h"
#include "report/steps.h"

namespace attnprof {

struct PassTensors {
  AttentionInputs in;
  Tensor out;
  Tensor dout;           // backward and train: dO, seeded (make_output_grad)
  AttentionGrads grads;  // backward and train
};
PassTensors make_pass_tensors(const AttentionSpec& spec, Pass pass, std::uint64_t seed);

// t itself on the CPU, else a host copy (synchronised).
Tensor to_host(const Tensor& t);
// Fills t (on any device) with poison_nan's pattern, so unwritten elements show.
void poison(Tensor& t);

// nullopt when `variant` can run `pass` on spec (refusal() already passed); else one line naming
// the pass, the variant, the device and what is allowed there: the forward pass, or the variants
// that have a backward on that device.
std::optional<std::string> pass_refusal(const Variant& variant, const AttentionSpec& spec, Pass pass);

// One profiled step's attention work. forward: forward() in attn_fwd. backward: the forward that
// keeps what the backward reads in attn_fwd, a synchronize, backward() in attn_bwd (the measured
// range). train: both ranges back to back, as a training step runs them. The caller synchronises
// after the step.
void run_pass_step(Variant& variant, const AttentionSpec& spec, Pass pass, PassTensors& t, ops::Backend& device);
// The measured part of one pass, timed by the wall clock between synchronisations (the forward of
// a backward pass runs before the clock starts), in ns.
double time_pass_ns(Variant& variant, const AttentionSpec& spec, Pass pass, PassTensors& t, ops::Backend& device);
// Peak device bytes of the measured part of one pass beyond what was live before it (a backward's
// does not count what its forward kept; a training step's does).
std::int64_t pass_peak_extra_bytes(Variant& variant, const AttentionSpec& spec, Pass pass, PassTensors& t,
                                   ops::Backend& device);
// The measured passes of a trace: its attn_fwd ranges (forward), attn_bwd ranges (backward), or
// each attn_fwd with the attn_bwd after it (train), one entry per pass.
report::ForwardSummary summarize_passes(const trace::Trace& trace, Pass pass);

// Backward and train: poisons the gradients, runs the backward of the forward_for_backward() just
// run, and sets result's grad_rel_err fields against the fp64 reference gradients.
void check_backward(Variant& variant, const AttentionSpec& spec, PassTensors& t, ops::Backend& device,
                    RunResult& result);
// Determinism: `runs` passes on the same inputs (the forward; for a backward or train pass the
// forward that keeps what the backward reads, then the backward), each output NaN-poisoned first,
// compared bit for bit with the first: out, and dq, dk, dv when the pass has a backward. Sets
// result's determinism_runs, determinism_mismatches (the later runs that differed anywhere) and
// determinism_differed (the tensors that differed in some run: "out", "dq", "dk", "dv").
void check_determinism(Variant& variant, const AttentionSpec& spec, Pass pass, PassTensors& t, ops::Backend& device,
                       int runs, RunResult& result);
// DIR/do.npy, dq.npy, dk.npy, dv.npy (logical [B,H,S,D] / [B,Hkv,S,D], bf16 as float32).
void dump_gradients(const std::string& dir, const PassTensors& t);

}  // namespace attnprof
