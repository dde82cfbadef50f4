// gpu_bench: times attnprof's registered variants (the objects `attnprof run` runs) on the GPU at
// given shapes and prints one JSON object per line (variant, shape, median device ms from CUDA
// events over rotated inputs, TFLOP/s, median host µs per forward, prepare ms (cuDNN's plan build),
// peak extra MiB, error vs fp64 on sampled rows; K/V read rate for decode shapes).
// bench/pytorch_side_by_side.py runs it beside PyTorch and prints the ratios.
//
//   gpu_bench --variants naive,flash --shapes 8x16x1024x64,4x16x4096x128 [--reps 30] [--json out.json]
//             [--pass forward|backward|train] [--reps-large N]
// --pass backward times a training step (the forward that keeps what the backward reads, then the
// backward, on a dO drawn like q, k and v) and that forward alone, the same way, and reports the
// backward as the difference of their medians (TFLOP/s on 2.5x the forward's FLOPs) with both
// medians and their spreads; --pass train the training step alone (3.5x). See run_backward().
// --reps-large: the repetitions at S >= 16384 (default max(3, reps / 3)).
// A shape BxHxSxD is self-attention (seq_q = seq_k, one kv head per head); BxHxSqxDxHkvxSk is a
// decode step against a KV cache (Hkv kv heads, Sk keys), run without the causal mask: the query
// rows see every key, as PyTorch's is_causal=False (with Sq = 1 the same as causal bottom-right).
// A suffix picks a kernel knob for one row (KernelOverrides, as `attnprof run` takes them):
// flash@sm80 = --flash-schedule sm80 (the mma.sync kernel on a Hopper GPU; also sm90-cta-per-tile,
// sm90-tile-counter); flash@deterministic = --deterministic (its backward without atomics);
// cudnn@n = --cudnn-engine n (the n-th engine config of cuDNN's heuristics).
#include <attnprof/error.h>
#include <attnprof/kernel_overrides.h>
#include <attnprof/memory.h>
#include <attnprof/variant.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "bench_text.h"
#include "core/atomic_file.h"
#include "cuda/attention_reference.h"
#include "cuda/check.h"
#include "cuda/cudnn_sdpa.h"
#include "cuda/event_pairs.h"
#include "cuda/gradient_check.h"
#include "run/preflight.h"
#include "variants/reference_backward.h"

using namespace attnprof;
using namespace attnprof::cuda::gpu_testing;

namespace {


struct Inputs {
  Tensor q_host, k_host, v_host, dout_host;
  Tensor q, k, v, dout;  // dout: backward and train passes only
};

ops::Backend& be() { return gpu(); }

using bench::split;

AttentionSpec parse_shape(const std::string& text, bool causal, DType dtype) {
  auto dims = split(text, 'x');
  if (dims.size() != 4 && dims.size() != 6)
    throw UsageError(fmt::format("--shapes {}: expected BxHxSxD (e.g. 8x16x1024x64) or BxHxSqxDxHkvxSk (e.g. "
                                 "8x32x1x128x8x32768)", text));
  AttentionSpec s;
  s.batch = std::stoll(dims[0]);
  s.heads = s.kv_heads = std::stoll(dims[1]);
  s.seq_q = s.seq_k = std::stoll(dims[2]);
  s.head_dim = std::stoll(dims[3]);
  s.causal = causal;
  if (dims.size() == 6) {
    s.kv_heads = std::stoll(dims[4]);
    s.seq_k = std::stoll(dims[5]);
    s.causal = false;
  }
  s.validate();
  s.dtype = dtype;
  s.device = Device::cuda;
  return s;
}

// flash@sm80 -> flash_schedule sm80; flash@deterministic -> deterministic (the backward without
// atomics); cudnn@2 -> cudnn_engine 2; no suffix: automatic. Installs the row's overrides and
// returns the variant's name without the suffix.
std::string apply_knobs(const std::string& name) {
  KernelOverrides overrides;
  const auto at = name.find('@');
  const std::string base = name.substr(0, at);
  if (at != std::string::npos) {
    const std::string knob = name.substr(at + 1);
    if (base == "cudnn") {
      std::size_t used = 0;
      try {
        overrides.cudnn_engine = std::stoi(knob, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != knob.size())
        throw UsageError(fmt::format("--variants {}: cudnn@n takes a config index 0, 1, 2, ...", name));
    } else if (knob == "deterministic") {
      if (base != "flash")
        throw UsageError(fmt::format("--variants {}: @deterministic chooses flash's backward (flash@deterministic)", name));
      overrides.deterministic = true;
    } else {
      overrides.flash_schedule = knob;
    }
  }
  set_kernel_overrides(overrides);  // a bad knob: UsageError naming the field and what it allows
  return base;
}

// A flag's value as an integer >= 1, or a UsageError naming the flag.
int positive_int(const std::string& flag, const std::string& text) {
  std::size_t used = 0;
  int value = 0;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value < 1)
    throw UsageError(fmt::format("{} {}: takes an integer >= 1", flag, text));
  return value;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Normal values; past 2^24 elements (a KV cache of 2 GiB a tensor) one block of 2^24 repeated, so
// making the inputs takes seconds, not minutes (the values only feed the timing and the error check).
void fill_normal_fast(Tensor& host, std::uint64_t seed) {
  constexpr std::int64_t kBlock = std::int64_t{1} << 24;
  if (host.numel() <= kBlock) return fill_normal(host, seed);
  Tensor block = Tensor::empty({kBlock}, host.dtype(), Device::cpu);
  fill_normal(block, seed);
  const std::size_t bytes = static_cast<std::size_t>(kBlock) * dtype_size(host.dtype());
  char* dst = static_cast<char*>(host.raw());
  const std::size_t total = static_cast<std::size_t>(host.numel()) * dtype_size(host.dtype());
  for (std::size_t at = 0; at < total; at += bytes) std::memcpy(dst + at, block.raw(), std::min(bytes, total - at));
}

// Three input sets, rotated so repeated runs don't sit in L2; made once per shape and shared by
// every variant of that shape (generating them dominated the run at the large anchors). K and V
// past 256 MiB (a KV cache, several times L2) are one pair shared by the three sets. With
// with_dout each set also gets its own dO ([B,H,Sq,D], normal values like q's).
std::vector<Inputs> make_input_sets(const AttentionSpec& s, bool with_dout) {
  const bool share_kv = 2 * s.batch * s.kv_heads * s.seq_k * s.head_dim * static_cast<std::int64_t>(dtype_size(s.dtype)) >
                        (std::int64_t{256} << 20);
  std::vector<Inputs> sets;
  for (std::uint64_t seed = 0; seed < 3; ++seed) {
    Inputs in;
    in.q_host = Tensor::empty({s.batch, s.heads, s.seq_q, s.head_dim}, s.dtype, Device::cpu);
    fill_normal_fast(in.q_host, 100 + seed * 3);
    in.q = to_device(in.q_host);
    if (share_kv && seed > 0) {
      in.k_host = sets[0].k_host, in.v_host = sets[0].v_host, in.k = sets[0].k, in.v = sets[0].v;
    } else {
      in.k_host = Tensor::empty({s.batch, s.kv_heads, s.seq_k, s.head_dim}, s.dtype, Device::cpu);
      in.v_host = Tensor::empty({s.batch, s.kv_heads, s.seq_k, s.head_dim}, s.dtype, Device::cpu);
      fill_normal_fast(in.k_host, 101 + seed * 3);
      fill_normal_fast(in.v_host, 102 + seed * 3);
      in.k = to_device(in.k_host);
      in.v = to_device(in.v_host);
    }
    if (with_dout) {
      in.dout_host = Tensor::empty({s.batch, s.heads, s.seq_q, s.head_dim}, s.dtype, Device::cpu);
      fill_normal_fast(in.dout_host, 200 + seed);
      in.dout = to_device(in.dout_host);
    }
    sets.push_back(std::move(in));
  }
  return sets;
}

// The stream waits on a 20 ms host function while the timed forwards are queued, so each event
// pair times the device work alone, never the CPU's issue time (as pytorch_side_by_side.py holds
// PyTorch's stream with a spin kernel).
void hold_stream_while_queueing(cudaStream_t stream) {
  ATTNPROF_CUDA_CHECK(cudaLaunchHostFunc(
      stream, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }, nullptr));
}

// Device ms of each of `reps` calls of step(i), each between a pair of CUDA events on the backend's
// stream, all queued behind hold_stream_while_queueing; host_us: the CPU µs each call took to queue.
struct Timing {
  std::vector<double> ms, host_us;
};
Timing time_on_stream(int reps, const std::function<void(int)>& step) {
  cudaStream_t stream = cuda::backend_stream();
  cuda::EventPairs events(static_cast<std::size_t>(reps));
  Timing t;
  hold_stream_while_queueing(stream);
  for (int i = 0; i < reps; ++i) {
    events.record_begin(static_cast<std::size_t>(i), stream);
    auto h0 = std::chrono::steady_clock::now();
    step(i);
    t.host_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - h0).count());
    events.record_end(static_cast<std::size_t>(i), stream);
  }
  be().synchronize();
  for (std::size_t i = 0; i < static_cast<std::size_t>(reps); ++i) t.ms.push_back(events.elapsed_ms(i));
  return t;
}

std::string run_one(Variant& variant, const AttentionSpec& s, const std::vector<Inputs>& sets, int reps, int warmup) {
  auto run = [&](const Inputs& in, Tensor& out) { variant.forward(s, in.q, in.k, in.v, out); };
  std::vector<Tensor> outs;
  for (int i = 0; i < 3; ++i) outs.push_back(Tensor::empty({s.batch, s.heads, s.seq_q, s.head_dim}, s.dtype, Device::cuda));
  if (auto refusal = variant.refusal(s)) throw UsageError(*refusal);

  // Once-per-shape work outside the forward (naive's mask, cuDNN's plan), then the first call.
  auto t0 = std::chrono::steady_clock::now();
  variant.prepare(s);
  be().synchronize();
  const double prepare_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  t0 = std::chrono::steady_clock::now();
  run(sets[0], outs[0]);
  be().synchronize();
  double first_call_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (int i = 0; i < warmup; ++i) run(sets[i % 3], outs[i % 3]);
  be().synchronize();

  // Error vs fp64 on sampled rows of set 0.
  poison(outs[0]);
  run(sets[0], outs[0]);
  be().synchronize();
  ReferenceResult ref = compare_with_fp64(s, sets[0].q_host, sets[0].k_host, sets[0].v_host, to_host(outs[0]), nullptr,
                                         /*max_heads=*/2);

  // Peak extra memory of one forward.
  be().synchronize();
  memory::reset_peak(Device::cuda);
  const std::int64_t before = memory::stats(Device::cuda).current_bytes;
  run(sets[1], outs[1]);
  be().synchronize();
  const double peak_extra_mib = static_cast<double>(memory::stats(Device::cuda).peak_bytes - before) / (1 << 20);

  const Timing timing = time_on_stream(reps, [&](int i) { run(sets[i % 3], outs[i % 3]); });
  const std::vector<double>& ms = timing.ms;
  const double med = median(ms);
  const double flops = pass_flops(s, Pass::forward);
  // The K and V bytes the forward must read, over its median time: a decode step's figure of merit.
  const double kv_bytes = 2.0 * s.batch * s.kv_heads * static_cast<double>(s.seq_k) * s.head_dim * dtype_size(s.dtype);
  return fmt::format(
      "{{\"variant\": \"{}\", \"B\": {}, \"H\": {}, \"S\": {}, \"D\": {}, \"Hkv\": {}, \"Sk\": {}, \"causal\": {}, "
      "\"median_ms\": {:.4f}, \"kv_tbps\": {:.3f}, "
      "\"min_ms\": {:.4f}, \"tflops\": {:.1f}, \"host_us_per_fwd\": {:.1f}, \"first_call_ms\": {:.1f}, \"prepare_ms\": {:.1f}, "
      "\"peak_extra_mib\": {:.1f}, \"rel_err_vs_fp64\": {:.2e}, \"unwritten\": {}}}",
      variant.name(), s.batch, s.heads, s.seq_q, s.head_dim, s.kv_heads, s.seq_k, s.causal ? "true" : "false", med,
      kv_bytes / (med * 1e-3) / 1e12, *std::min_element(ms.begin(), ms.end()),
      flops / (med * 1e-3) / 1e12, median(timing.host_us), first_call_ms, prepare_ms, peak_extra_mib, ref.rel_error,
      ref.non_finite);
}

// "\"B\": 8, \"H\": 16, \"S\": 1024, \"D\": 64, \"Hkv\": 16, \"Sk\": 1024": the shape fields of a row.
std::string shape_fields(const AttentionSpec& s) {
  return fmt::format("\"B\": {}, \"H\": {}, \"S\": {}, \"D\": {}, \"Hkv\": {}, \"Sk\": {}", s.batch, s.heads, s.seq_q,
                     s.head_dim, s.kv_heads, s.seq_k);
}

// A JSON number in scientific notation, two digits after the point; null when not finite (a NaN
// gradient), which JSON has no number for.
std::string json_sci(double value) { return std::isfinite(value) ? fmt::format("{:.2e}", value) : "null"; }

// The value at quantile q (nearest rank) of sorted values.
double quantile(const std::vector<double>& sorted, double q) {
  return sorted[static_cast<std::size_t>(std::lround(q * static_cast<double>(sorted.size() - 1)))];
}

// "NAME_median_ms", "NAME_p10_ms", "NAME_p90_ms", "NAME_min_ms", "NAME_max_ms" of ms.
std::string spread_fields(const char* name, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  return fmt::format("\"{0}_median_ms\": {1:.4f}, \"{0}_p10_ms\": {2:.4f}, \"{0}_p90_ms\": {3:.4f}, "
                     "\"{0}_min_ms\": {4:.4f}, \"{0}_max_ms\": {5:.4f}",
                     name, median(ms), quantile(ms, 0.1), quantile(ms, 0.9), ms.front(), ms.back());
}

// Host copies of set 0's gradients (after a backward of a NaN-poisoned dq, dk, dv): the elements
// still poisoned (never written) and the errors against fp64, by variants::check_gradients (every
// element of a small problem, a fixed sample of a large one; its scope is named).
std::string grad_fields(const AttentionSpec& s, const Inputs& set0, const Tensor& dq, const Tensor& dk,
                        const Tensor& dv) {
  const std::int64_t unwritten = variants::count_poison(dq) + variants::count_poison(dk) + variants::count_poison(dv);
  const variants::GradientErrors err =
      variants::check_gradients(s, set0.q_host, set0.k_host, set0.v_host, set0.dout_host, dq, dk, dv);
  return fmt::format("\"grad_unwritten\": {}, \"grad_checked\": true, \"grad_check_scope\": \"{}\", "
                     "\"grad_rel_err\": {}, \"grad_rel_err_dq\": {}, \"grad_rel_err_dk\": {}, \"grad_rel_err_dv\": {}",
                     unwritten, err.scope(), json_sci(err.worst()), json_sci(err.dq), json_sci(err.dk),
                     json_sci(err.dv));
}

// A backward or train row. Steps on the rotated sets: the forward that keeps what the backward
// reads (forward_for_backward), and a training step (that forward, then backward() with the
// set's dO). --pass backward times both the same way (time_on_stream) and reports the backward
// as train median − forward median, with both medians and their spreads; --pass train times the
// training step alone. prepare() and prepare_backward() (cuDNN's plans) run before, untimed.
std::string run_backward(Variant& variant, const AttentionSpec& s, Pass pass, const std::vector<Inputs>& sets,
                         int reps, int warmup) {
  if (auto refusal = variant.refusal(s)) throw UsageError(*refusal);
  if (auto refusal = variant.backward_refusal(s)) throw UsageError(*refusal);
  preflight_memory(s, variant, pass);  // a UsageError naming the estimate and the free device memory
  std::vector<Tensor> outs;
  std::vector<AttentionGrads> grads;
  for (int i = 0; i < 3; ++i) {
    outs.push_back(make_output(s));
    grads.push_back(make_grads(s));
  }
  auto forward = [&](int i) {
    const Inputs& in = sets[i % 3];
    variant.forward_for_backward(s, in.q, in.k, in.v, outs[i % 3]);
  };
  auto backward = [&](int i) {  // of the forward_for_backward(i) just run
    const Inputs& in = sets[i % 3];
    AttentionGrads& g = grads[i % 3];
    variant.backward(s, in.q, in.k, in.v, outs[i % 3], in.dout, g.dq, g.dk, g.dv);
  };
  auto train = [&](int i) {
    forward(i);
    backward(i);
  };

  auto t0 = std::chrono::steady_clock::now();
  variant.prepare(s);
  variant.prepare_backward(s);
  be().synchronize();
  const double prepare_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  t0 = std::chrono::steady_clock::now();
  train(0);
  be().synchronize();
  const double first_step_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (int i = 0; i < warmup; ++i) train(i);
  be().synchronize();

  // Set 0's gradients, every element NaN-poisoned first.
  poison_pattern(grads[0].dq);
  poison_pattern(grads[0].dk);
  poison_pattern(grads[0].dv);
  train(0);
  be().synchronize();
  const std::string grads_checked =
      grad_fields(s, sets[0], to_host_exact(grads[0].dq), to_host_exact(grads[0].dk), to_host_exact(grads[0].dv));

  // Memory of one training step beyond what was live before it: what its forward keeps for the
  // backward, and the step's peak (that kept state included).
  variant.release_saved();
  be().synchronize();
  memory::reset_peak(Device::cuda);
  const std::int64_t before = memory::stats(Device::cuda).current_bytes;
  forward(1);
  be().synchronize();
  const double kept_mib = static_cast<double>(memory::stats(Device::cuda).current_bytes - before) / (1 << 20);
  backward(1);
  be().synchronize();
  const double peak_extra_mib = static_cast<double>(memory::stats(Device::cuda).peak_bytes - before) / (1 << 20);

  std::string fwd_fields;
  double fwd_median = 0;
  if (pass == Pass::backward) {
    const Timing fwd = time_on_stream(reps, forward);
    fwd_median = median(fwd.ms);
    fwd_fields = spread_fields("fwd", fwd.ms) + ", ";
  }
  const Timing steps = time_on_stream(reps, train);
  // The backward (train − forward; null TFLOP/s where noise makes it <= 0) or the training step.
  const double med = median(steps.ms) - fwd_median;
  return fmt::format(
      "{{\"variant\": \"{}\", \"pass\": \"{}\", {}, \"causal\": {}, \"reps\": {}, \"median_ms\": {:.4f}, "
      "\"tflops\": {}, {}{}, \"host_us_per_step\": {:.1f}, \"first_step_ms\": {:.1f}, \"prepare_ms\": {:.1f}, "
      "\"kept_mib\": {:.1f}, \"peak_extra_mib\": {:.1f}, {}}}",
      variant.name(), pass_name(pass), shape_fields(s), s.causal ? "true" : "false", reps, med,
      med > 0 ? fmt::format("{:.1f}", pass_flops(s, pass) / (med * 1e-3) / 1e12) : "null", fwd_fields, spread_fields("train", steps.ms), median(steps.host_us),
      first_step_ms, prepare_ms, kept_mib, peak_extra_mib, grads_checked);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string variants = "naive,inplace,math,fused,efficient,flash,cudnn", shapes = "8x16x1024x64", json_path;
    int reps = 30, warmup = 5, reps_large = -1;
    bool causal = true;
    Pass pass = Pass::forward;
    DType dtype = DType::bf16;
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw UsageError(fmt::format("{}: needs a value", a));
        return argv[++i];
      };
      if (a == "--variants") variants = value();
      else if (a == "--shapes") shapes = value();
      else if (a == "--reps") reps = positive_int(a, value());
      else if (a == "--reps-large") reps_large = positive_int(a, value());
      else if (a == "--pass") pass = parse_pass(value());
      else if (a == "--warmup") warmup = std::stoi(value());
      else if (a == "--json") json_path = value();
      else if (a == "--no-causal") causal = false;
      else if (a == "--dtype") dtype = value() == "fp16" ? DType::fp16 : DType::bf16;
      else throw UsageError(fmt::format("{}: unknown flag (allowed: --variants --shapes --reps --reps-large --warmup --json --no-causal --dtype --pass)", a));
    }
    be();  // the CUDA backend, or a UsageError naming the reason there is no GPU
    // The cuDNN library loaded (not the headers built against): pytorch_side_by_side.py checks it.
    std::fprintf(stderr, "gpu_bench: cuDNN %lld loaded\n", static_cast<long long>(attnprof::cuda::cudnn_version()));
    std::string lines;
    for (const std::string& shape : split(shapes, ',')) {
      AttentionSpec s = parse_shape(shape, causal, dtype);
      const std::vector<Inputs> sets = make_input_sets(s, pass != Pass::forward);
      const int shape_reps = s.seq_q >= 16384 ? (reps_large > 0 ? reps_large : std::max(3, reps / 3)) : reps;
      for (const std::string& name : split(variants, ',')) {
        const std::string base = apply_knobs(name);
        Variant* variant = find_variant(base);
        if (variant == nullptr)
          throw UsageError(fmt::format("--variants {}: unknown variant; allowed: {}", name, variant_names()));
        // S² variants at S=16384 need tens of GiB; they run like PyTorch's (which needs the same).
        // A backward or train row that would not fit is refused by the memory preflight, saying so.
        std::string line;
        try {
          line = pass == Pass::forward ? run_one(*variant, s, sets, shape_reps, warmup)
                                       : run_backward(*variant, s, pass, sets, shape_reps, warmup);
          if (base != name) line.replace(line.find(base), base.size(), name);
        } catch (const Error& e) {
          std::string why = std::string(e.what()).substr(0, 300);
          std::replace(why.begin(), why.end(), '"', '\'');
          std::replace(why.begin(), why.end(), '\\', '/');  // Error's escapes (\x1b) are not JSON's
          line = fmt::format("{{\"variant\": \"{}\", \"pass\": \"{}\", {}, \"error\": \"{}\"}}", name, pass_name(pass),
                             shape_fields(s), why);
        }
        // What a backward kept and the pool's blocks go back before the next row: the S×S
        // probabilities of naive's backward would otherwise stay with the process.
        variant->release_saved();
        if (pass != Pass::forward) be().release_cached_memory();
        std::puts(line.c_str());
        std::fflush(stdout);
        lines += line + "\n";
      }
    }
    if (!json_path.empty()) write_file_atomically(json_path, lines, "--json");
    return 0;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "gpu_bench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_bench: %s\n", e.what());
    return 1;
  }
}
