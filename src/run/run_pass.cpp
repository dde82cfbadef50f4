#include "run/run_pass.h"

#include <attnprof/error.h>
#include <attnprof/memory.h>
#include <attnprof/profiler.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "run/npy.h"
#include "variants/reference.h"
#include "variants/reference_backward.h"

namespace attnprof {
namespace {

// A named range for our profiler and for the device's tools (NVTX, so Nsight Systems shows it too).
class PassRange {
 public:
  PassRange(ops::Backend& device, const char* name) : device_(device), range_(trace::Category::user_annotation, name) {
    device_.push_range(name);
  }
  ~PassRange() { device_.pop_range(); }
  PassRange(const PassRange&) = delete;
  PassRange& operator=(const PassRange&) = delete;

 private:
  ops::Backend& device_;
  profiler::Range range_;
};

void backward(Variant& variant, const AttentionSpec& spec, PassTensors& t) {
  variant.backward(spec, t.in.q, t.in.k, t.in.v, t.out, t.dout, t.grads.dq, t.grads.dk, t.grads.dv);
}

}  // namespace

PassTensors make_pass_tensors(const AttentionSpec& spec, Pass pass, std::uint64_t seed) {
  PassTensors t;
  t.in = make_inputs(spec, seed);
  t.out = make_output(spec);
  if (pass != Pass::forward) {
    t.dout = make_output_grad(spec, seed);
    t.grads = make_grads(spec);
  }
  return t;
}

Tensor to_host(const Tensor& t) {
  if (t.device() == Device::cpu) return t;
  Tensor host = Tensor::empty_strided(t.shape(), t.strides(), t.dtype(), Device::cpu);
  ops::backend(t.device()).copy(host, t);
  ops::backend(t.device()).synchronize();
  return host;
}

void poison(Tensor& t) {
  if (t.device() == Device::cpu) {
    variants::poison_nan(t);
    return;
  }
  Tensor host = Tensor::empty_strided(t.shape(), t.strides(), t.dtype(), Device::cpu);
  variants::poison_nan(host);
  ops::backend(t.device()).copy(t, host);
}

std::optional<std::string> pass_refusal(const Variant& variant, const AttentionSpec& spec, Pass pass) {
  if (pass == Pass::forward) return std::nullopt;
  const std::optional<std::string> why = variant.backward_refusal(spec);
  if (!why) return std::nullopt;
  std::string with_backward;
  for (const Variant* other : all_variants()) {
    if (other->refusal(spec) || other->backward_refusal(spec)) continue;
    with_backward += (with_backward.empty() ? "" : "|") + std::string(other->name());
  }
  const std::string device(device_name(spec.device));
  return with_backward.empty()
             ? fmt::format("pass {}: {}; allowed on device {}: pass forward (no variant has a backward there)",
                           pass_name(pass), *why, device)
             : fmt::format("pass {}: {}; allowed on device {}: pass forward; variant {}", pass_name(pass), *why, device,
                           with_backward);
}

void run_pass_step(Variant& variant, const AttentionSpec& spec, Pass pass, PassTensors& t, ops::Backend& device) {
  if (pass == Pass::forward) {
    PassRange range(device, "attn_fwd");
    variant.forward(spec, t.in.q, t.in.k, t.in.v, t.out);
    return;
  }
  {
    PassRange range(device, "attn_fwd");
    variant.forward_for_backward(spec, t.in.q, t.in.k, t.in.v, t.out);
  }
  // The backward alone is measured: its range must not wait for the forward's device work.
  if (pass == Pass::backward) device.synchronize();
  PassRange range(device, "attn_bwd");
  backward(variant, spec, t);
}

double time_pass_ns(Variant& variant, const AttentionSpec& spec, Pass pass, PassTensors& t, ops::Backend& device) {
  if (pass == Pass::backward) {
    variant.forward_for_backward(spec, t.in.q, t.in.k, t.in.v, t.out);
    device.synchronize();
  }
  const std::int64_t start = profiler::now_ns();
  if (pass == Pass::forward) variant.forward(spec, t.in.q, t.in.k, t.in.v, t.out);
  if (pass == Pass::train) variant.forward_for_backward(spec, t.in.q, t.in.k, t.in.v, t.out);
  if (pass != Pass::forward) backward(variant, spec, t);
  device.synchronize();
  return static_cast<double>(profiler::now_ns() - start);
}

std::int64_t pass_peak_extra_bytes(Variant& variant, const AttentionSpec& spec, Pass pass, PassTensors& t,
                                   ops::Backend& device) {
  if (pass == Pass::backward) {
    variant.forward_for_backward(spec, t.in.q, t.in.k, t.in.v, t.out);
    device.synchronize();
  } else if (pass == Pass::train) {
    // What an earlier forward kept (the correctness check's) is freed first, so the step's own
    // forward allocates what it keeps inside the measured peak.
    variant.release_saved();
    device.synchronize();
  }
  memory::reset_peak(spec.device);
  const std::int64_t live_before = memory::stats(spec.device).current_bytes;
  if (pass == Pass::forward) variant.forward(spec, t.in.q, t.in.k, t.in.v, t.out);
  if (pass == Pass::train) variant.forward_for_backward(spec, t.in.q, t.in.k, t.in.v, t.out);
  if (pass != Pass::forward) backward(variant, spec, t);
  device.synchronize();
  return memory::stats(spec.device).peak_bytes - live_before;
}

report::ForwardSummary summarize_passes(const trace::Trace& trace, Pass pass) {
  if (pass == Pass::forward) return report::summarize_forwards(trace, "attn_fwd");
  if (pass == Pass::backward) return report::summarize_forwards(trace, "attn_bwd");
  // A training step: each forward with the backward after it.
  const report::ForwardSummary fwd = report::summarize_forwards(trace, "attn_fwd");
  const report::ForwardSummary bwd = report::summarize_forwards(trace, "attn_bwd");
  report::ForwardSummary steps;
  steps.on_device = fwd.on_device || bwd.on_device;
  const std::size_t n = std::min(fwd.forwards.size(), bwd.forwards.size());
  // A train step's device time is the union over both ranges' work, as every device time is
  // (report/interval_union.h), not the sum of their two unions.
  for (std::size_t i = 0; i < n; ++i) steps.forwards.push_back(report::join_work(fwd.forwards[i], bwd.forwards[i]));
  report::average_forwards(steps);
  return steps;
}

void check_backward(Variant& variant, const AttentionSpec& spec, PassTensors& t, ops::Backend& device,
                    RunResult& result) {
  poison(t.grads.dq);
  poison(t.grads.dk);
  poison(t.grads.dv);
  backward(variant, spec, t);
  device.synchronize();
  const variants::GradientErrors err =
      variants::check_gradients(spec, to_host(t.in.q), to_host(t.in.k), to_host(t.in.v), to_host(t.dout),
                                to_host(t.grads.dq), to_host(t.grads.dk), to_host(t.grads.dv));
  result.grad_rel_err = err.worst();
  result.grad_rel_err_dq = err.dq;
  result.grad_rel_err_dk = err.dk;
  result.grad_rel_err_dv = err.dv;
  result.grad_err_scope = err.scope();
}

void dump_gradients(const std::string& dir, const PassTensors& t) {
  const std::filesystem::path d(dir);
  write_npy((d / "do.npy").string(), to_host(t.dout));
  write_npy((d / "dq.npy").string(), to_host(t.grads.dq));
  write_npy((d / "dk.npy").string(), to_host(t.grads.dk));
  write_npy((d / "dv.npy").string(), to_host(t.grads.dv));
}

void check_determinism(Variant& variant, const AttentionSpec& spec, Pass pass, PassTensors& t, ops::Backend& device,
                       int runs, RunResult& result) {
  result.determinism_runs = runs;
  result.determinism_mismatches = 0;
  result.determinism_differed.clear();
  // One pass: the forward (keeping what a backward reads), then for a backward or train pass the
  // backward; every output NaN-poisoned first, so an element some runs leave unwritten differs.
  auto run_once = [&] {
    poison(t.out);
    if (pass == Pass::forward) {
      variant.forward(spec, t.in.q, t.in.k, t.in.v, t.out);
    } else {
      variant.forward_for_backward(spec, t.in.q, t.in.k, t.in.v, t.out);
      device.synchronize();
      poison(t.grads.dq);
      poison(t.grads.dk);
      poison(t.grads.dv);
      backward(variant, spec, t);
    }
    device.synchronize();
  };
  struct Compared {
    const char* name;
    const Tensor* tensor;
    std::vector<unsigned char> first;  // a copy: on the CPU to_host is the tensor itself
  };
  std::vector<Compared> compared{{"out", &t.out, {}}};
  if (pass != Pass::forward) {
    compared.push_back({"dq", &t.grads.dq, {}});
    compared.push_back({"dk", &t.grads.dk, {}});
    compared.push_back({"dv", &t.grads.dv, {}});
  }
  run_once();
  for (Compared& c : compared) {
    const Tensor host = to_host(*c.tensor);
    const auto* bytes = static_cast<const unsigned char*>(host.raw());
    c.first.assign(bytes, bytes + host.storage_bytes());
  }
  std::vector<bool> differed(compared.size(), false);
  for (int run = 1; run < runs; ++run) {
    run_once();
    bool any = false;
    for (std::size_t i = 0; i < compared.size(); ++i) {
      const Tensor again = to_host(*compared[i].tensor);
      if (std::memcmp(again.raw(), compared[i].first.data(), compared[i].first.size()) == 0) continue;
      differed[i] = any = true;
    }
    if (any) ++result.determinism_mismatches;
  }
  for (std::size_t i = 0; i < compared.size(); ++i)
    if (differed[i]) result.determinism_differed.emplace_back(compared[i].name);
}

}  // namespace attnprof
