// gpu_bench: times attnprof's registered variants (the objects `attnprof run` runs) on the GPU at
// given shapes and prints one JSON object per line (variant, shape, median device ms from CUDA
// events over rotated inputs, TFLOP/s, median host µs per forward, prepare ms (cuDNN's plan build),
// peak extra MiB, error vs fp64 on sampled rows; K/V read rate for decode shapes).
// bench/pytorch_side_by_side.py runs it beside PyTorch and prints the ratios.
//
//   gpu_bench --variants naive,flash --shapes 8x16x1024x64,4x16x4096x128 [--reps 30] [--json out.json]
// A shape BxHxSxD is self-attention (seq_q = seq_k, one kv head per head); BxHxSqxDxHkvxSk is a
// decode step against a KV cache (Hkv kv heads, Sk keys), run without the causal mask: the query
// rows see every key, as PyTorch's is_causal=False (with Sq = 1 the same as causal bottom-right).
// A suffix picks a kernel knob for one row (KernelOverrides, as `attnprof run` takes them):
// flash@sm80 = --flash-schedule sm80 (the mma.sync kernel on a Hopper GPU; also sm90-cta-per-tile,
// sm90-tile-counter); cudnn@n = --cudnn-engine n (the n-th engine config of cuDNN's heuristics).
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
#include "cuda/event_pairs.h"

using namespace attnprof;
using namespace attnprof::cuda::gpu_testing;

namespace {


struct Inputs {
  Tensor q_host, k_host, v_host;
  Tensor q, k, v;
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

// flash@sm80 -> flash_schedule sm80; cudnn@2 -> cudnn_engine 2; no suffix: automatic. Installs
// the row's overrides and returns the variant's name without the suffix.
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
    } else {
      overrides.flash_schedule = knob;
    }
  }
  set_kernel_overrides(overrides);  // a bad knob: UsageError naming the field and what it allows
  return base;
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
// past 256 MiB (a KV cache, several times L2) are one pair shared by the three sets.
std::vector<Inputs> make_input_sets(const AttentionSpec& s) {
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

  cudaStream_t stream = cuda::backend_stream();
  cuda::EventPairs events(static_cast<std::size_t>(reps));
  std::vector<double> host_us;
  hold_stream_while_queueing(stream);
  for (int i = 0; i < reps; ++i) {
    events.record_begin(static_cast<std::size_t>(i), stream);
    auto h0 = std::chrono::steady_clock::now();
    run(sets[i % 3], outs[i % 3]);
    host_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - h0).count());
    events.record_end(static_cast<std::size_t>(i), stream);
  }
  be().synchronize();
  std::vector<double> ms;
  for (std::size_t i = 0; i < static_cast<std::size_t>(reps); ++i) ms.push_back(events.elapsed_ms(i));
  const double med = median(ms);
  const double flops = 4.0 * s.batch * s.heads * static_cast<double>(s.seq_q) * s.seq_k * s.head_dim / (s.causal ? 2.0 : 1.0);
  // The K and V bytes the forward must read, over its median time: a decode step's figure of merit.
  const double kv_bytes = 2.0 * s.batch * s.kv_heads * static_cast<double>(s.seq_k) * s.head_dim * dtype_size(s.dtype);
  return fmt::format(
      "{{\"variant\": \"{}\", \"B\": {}, \"H\": {}, \"S\": {}, \"D\": {}, \"Hkv\": {}, \"Sk\": {}, \"causal\": {}, "
      "\"median_ms\": {:.4f}, \"kv_tbps\": {:.3f}, "
      "\"min_ms\": {:.4f}, \"tflops\": {:.1f}, \"host_us_per_fwd\": {:.1f}, \"first_call_ms\": {:.1f}, \"prepare_ms\": {:.1f}, "
      "\"peak_extra_mib\": {:.1f}, \"rel_err_vs_fp64\": {:.2e}, \"unwritten\": {}}}",
      variant.name(), s.batch, s.heads, s.seq_q, s.head_dim, s.kv_heads, s.seq_k, s.causal ? "true" : "false", med,
      kv_bytes / (med * 1e-3) / 1e12, *std::min_element(ms.begin(), ms.end()),
      flops / (med * 1e-3) / 1e12, median(host_us), first_call_ms, prepare_ms, peak_extra_mib, ref.rel_error,
      ref.non_finite);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string variants = "naive,inplace,math,fused,efficient,flash,cudnn", shapes = "8x16x1024x64", json_path;
    int reps = 30, warmup = 5;
    bool causal = true;
    DType dtype = DType::bf16;
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw UsageError(fmt::format("{}: needs a value", a));
        return argv[++i];
      };
      if (a == "--variants") variants = value();
      else if (a == "--shapes") shapes = value();
      else if (a == "--reps") reps = std::stoi(value());
      else if (a == "--warmup") warmup = std::stoi(value());
      else if (a == "--json") json_path = value();
      else if (a == "--no-causal") causal = false;
      else if (a == "--dtype") dtype = value() == "fp16" ? DType::fp16 : DType::bf16;
      else throw UsageError(fmt::format("{}: unknown flag (allowed: --variants --shapes --reps --warmup --json --no-causal --dtype)", a));
    }
    be();  // the CUDA backend, or a UsageError naming the reason there is no GPU
    std::string lines;
    for (const std::string& shape : split(shapes, ',')) {
      AttentionSpec s = parse_shape(shape, causal, dtype);
      const std::vector<Inputs> sets = make_input_sets(s);
      for (const std::string& name : split(variants, ',')) {
        const std::string base = apply_knobs(name);
        Variant* variant = find_variant(base);
        if (variant == nullptr)
          throw UsageError(fmt::format("--variants {}: unknown variant; allowed: {}", name, variant_names()));
        // S² variants at S=16384 need tens of GiB; they run like PyTorch's (which needs the same).
        std::string line;
        try {
          line = run_one(*variant, s, sets, s.seq_q >= 16384 ? std::max(3, reps / 3) : reps, warmup);
          if (base != name) line.replace(line.find(base), base.size(), name);
        } catch (const Error& e) {
          std::string why = std::string(e.what()).substr(0, 300);
          std::replace(why.begin(), why.end(), '"', '\'');
          line = fmt::format(
              "{{\"variant\": \"{}\", \"B\": {}, \"H\": {}, \"S\": {}, \"D\": {}, \"Hkv\": {}, \"Sk\": {}, \"error\": \"{}\"}}",
              name, s.batch, s.heads, s.seq_q, s.head_dim, s.kv_heads, s.seq_k, why);
        }
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
