// gpu_bench: times attnprof's CUDA variants at given shapes and prints one JSON object per line
// (variant, shape, median device ms from CUDA events over rotated inputs, TFLOP/s, median host µs
// per forward, peak extra MiB, kernels/fwd of the sequence, error vs fp64 on sampled rows).
// bench/pytorch_side_by_side.py runs it beside PyTorch and prints the ratios.
//
// Until the runner/CLI exists, the composed variants run here as the same backend-call sequences
// the variants issue (naive, inplace, math as PyTorch's math backend, fused as torch.compile's).
//
//   gpu_bench --variants naive,flash --shapes 8x16x1024x64,4x16x4096x128 [--reps 30] [--json out.json]
//   flash@k runs tile configuration k of the sm80 kernel; flash@sm80, flash@sm90, flash@sm90-m128,
//   flash@sm90-persistent, flash@sm90-serial pick the kernel (ATTNPROF_FLASH_KERNEL), so one run can
//   time them side by side.
#include <attnprof/error.h>
#include <attnprof/memory.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "cuda/attention_reference.h"
#include "cuda/check.h"
#include "cuda/cudnn_sdpa.h"

using namespace attnprof;
using namespace attnprof::cuda::gpu_testing;

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

struct Inputs {
  Tensor q_host, k_host, v_host;
  Tensor q, k, v;
};

struct Forward {
  const char* name;
  int kernels;  // device work items one forward issues (memcpys included), by construction of the sequence
  std::function<void(const AttentionSpec&, const Inputs&, Tensor& out)> run;
};

ops::Backend& be() { return gpu(); }

Tensor empty_like_shape(std::vector<std::int64_t> shape, DType dtype) { return Tensor::empty(std::move(shape), dtype, Device::cuda); }

// The bool causal mask (True above the diagonal = masked), built once per shape outside the forward.
Tensor g_causal_mask;
Tensor causal_mask_view(const AttentionSpec& s) {
  if (!g_causal_mask.defined() || g_causal_mask.size(0) != s.seq_q || g_causal_mask.size(1) != s.seq_k) {
    Tensor ones = empty_like_shape({s.seq_q, s.seq_k}, DType::boolean);
    be().fill(ones, 1.0);
    g_causal_mask = empty_like_shape({s.seq_q, s.seq_k}, DType::boolean);
    be().triu(g_causal_mask, ones, 1);
  }
  return g_causal_mask.view_strided({s.batch, s.heads, s.seq_q, s.seq_k}, {0, 0, s.seq_k, 1});
}

double scale_of(const AttentionSpec& s) { return 1.0 / std::sqrt(static_cast<double>(s.head_dim)); }

// naive: q·kᵀ → ·scale → out-of-place masked_fill (clone = Memcpy DtoD, then the fill) → softmax → ·v.
void naive(const AttentionSpec& s, const Inputs& in, Tensor& out, bool in_place) {
  Tensor mask = causal_mask_view(s);
  Tensor scores = empty_like_shape({s.batch, s.heads, s.seq_q, s.seq_k}, s.dtype);
  be().batched_gemm(scores, in.q, in.k, true, 1.0f, true);
  if (in_place) {
    be().mul_scalar(scores, scores, scale_of(s));
    be().masked_fill(scores, scores, mask, kNegInf);
  } else {
    Tensor scaled = empty_like_shape(scores.shape(), s.dtype);
    be().mul_scalar(scaled, scores, scale_of(s));
    scores = Tensor();  // Python drops the old reference on reassignment
    Tensor masked = empty_like_shape(scaled.shape(), s.dtype);
    be().copy(masked, scaled);  // clone
    scaled = Tensor();
    be().masked_fill(masked, masked, mask, kNegInf);
    scores = masked;
  }
  Tensor probs = empty_like_shape(scores.shape(), s.dtype);
  be().softmax_lastdim(probs, scores);
  scores = Tensor();
  be().batched_gemm(out, probs, in.v, false, 1.0f, true);
}

// PyTorch's math backend for bf16 + is_causal: upcast, mask rebuilt each call, q and k each scaled by
// √scale, fp32 GEMMs with TF32 off, additive mask, _safe_softmax, downcast.
void math(const AttentionSpec& s, const Inputs& in, Tensor& out) {
  auto upcast = [&](const Tensor& t) {
    Tensor f = empty_like_shape(t.shape(), DType::fp32);
    be().copy(f, t);
    return f;
  };
  Tensor q = upcast(in.q), k = upcast(in.k), v = upcast(in.v);
  Tensor additive = empty_like_shape({s.seq_q, s.seq_k}, DType::fp32);
  {
    Tensor ones = empty_like_shape({s.seq_q, s.seq_k}, DType::boolean);
    be().fill(ones, 1.0);
    Tensor keep = empty_like_shape({s.seq_q, s.seq_k}, DType::boolean);
    be().tril(keep, ones, 0);
    be().fill(additive, 0.0);
    Tensor masked = empty_like_shape({s.seq_q, s.seq_k}, DType::boolean);
    be().logical_not(masked, keep);
    be().masked_fill(additive, additive, masked, kNegInf);
  }
  const double root = std::sqrt(scale_of(s));
  Tensor attn = empty_like_shape({s.batch, s.heads, s.seq_q, s.seq_k}, DType::fp32);
  {
    Tensor qs = empty_like_shape(q.shape(), DType::fp32), ks = empty_like_shape(k.shape(), DType::fp32);
    be().mul_scalar(qs, q, root);
    q = Tensor();
    be().mul_scalar(ks, k, root);
    k = Tensor();
    be().batched_gemm(attn, qs, ks, true, 1.0f, false);
  }
  be().add(attn, attn, additive.view_strided(attn.shape(), {0, 0, s.seq_k, 1}));
  // _safe_softmax: softmax, then rows that were all -inf become 0 (isneginf, all, where).
  Tensor probs = empty_like_shape(attn.shape(), DType::fp32);
  be().softmax_lastdim(probs, attn);
  Tensor row_masked = empty_like_shape({s.batch, s.heads, s.seq_q, 1}, DType::boolean);
  {
    Tensor is_neg_inf = empty_like_shape(attn.shape(), DType::boolean);
    be().isneginf(is_neg_inf, attn);
    be().all_lastdim(row_masked, is_neg_inf);
  }
  attn = Tensor();
  Tensor zero = empty_like_shape({1}, DType::fp32);
  be().fill(zero, 0.0);
  be().where(probs, row_masked.view_strided(probs.shape(), {row_masked.stride(0), row_masked.stride(1), 1, 0}),
             zero.view_strided(probs.shape(), {0, 0, 0, 0}), probs);
  Tensor o = empty_like_shape(out.shape(), DType::fp32);
  be().batched_gemm(o, probs, v, false, 1.0f, false);
  be().copy(out, o);
}

// torch.compile of the in-place module: GEMM, one scale+mask+softmax kernel, GEMM.
void fused(const AttentionSpec& s, const Inputs& in, Tensor& out) {
  Tensor scores = empty_like_shape({s.batch, s.heads, s.seq_q, s.seq_k}, s.dtype);
  be().batched_gemm(scores, in.q, in.k, true, 1.0f, true);
  be().scale_mask_softmax(scores, scores, scale_of(s), s.causal);  // in place, as inductor reuses the buffer
  be().batched_gemm(out, scores, in.v, false, 1.0f, true);
}

std::vector<Forward> forwards() {
  return {
      {"naive", 6, [](const AttentionSpec& s, const Inputs& in, Tensor& out) { naive(s, in, out, false); }},
      {"inplace", 5, [](const AttentionSpec& s, const Inputs& in, Tensor& out) { naive(s, in, out, true); }},
      {"math", 19, [](const AttentionSpec& s, const Inputs& in, Tensor& out) { math(s, in, out); }},
      {"fused", 3, [](const AttentionSpec& s, const Inputs& in, Tensor& out) { fused(s, in, out); }},
      {"efficient", 1,
       [](const AttentionSpec& s, const Inputs& in, Tensor& out) { be().attention_efficient(s, out, in.q, in.k, in.v, nullptr); }},
      {"flash", 1,
       [](const AttentionSpec& s, const Inputs& in, Tensor& out) { be().attention_flash(s, out, in.q, in.k, in.v, nullptr); }},
      {"cudnn", 2,  // cuDNN's 4-byte workspace memset + its kernel
       [](const AttentionSpec& s, const Inputs& in, Tensor& out) {
         cuda::cudnn_sdpa_forward(s, out, in.q, in.k, in.v, nullptr, cuda::backend_stream());
       }},
  };
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, sep))
    if (!part.empty()) parts.push_back(part);
  return parts;
}

AttentionSpec parse_shape(const std::string& text, bool causal, DType dtype) {
  auto dims = split(text, 'x');
  if (dims.size() != 4) throw UsageError(fmt::format("--shapes {}: expected BxHxSxD, e.g. 8x16x1024x64", text));
  AttentionSpec s;
  s.batch = std::stoll(dims[0]);
  s.heads = s.kv_heads = std::stoll(dims[1]);
  s.seq_q = s.seq_k = std::stoll(dims[2]);
  s.head_dim = std::stoll(dims[3]);
  s.causal = causal;
  s.dtype = dtype;
  s.device = Device::cuda;
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

std::string run_one(const Forward& f, const AttentionSpec& s, int reps, int warmup) {
  std::vector<Inputs> sets;
  for (std::uint64_t seed = 0; seed < 3; ++seed) {  // rotated so repeated runs don't sit in L2
    Inputs in;
    in.q_host = Tensor::empty({s.batch, s.heads, s.seq_q, s.head_dim}, s.dtype, Device::cpu);
    in.k_host = Tensor::empty({s.batch, s.kv_heads, s.seq_k, s.head_dim}, s.dtype, Device::cpu);
    in.v_host = Tensor::empty({s.batch, s.kv_heads, s.seq_k, s.head_dim}, s.dtype, Device::cpu);
    fill_normal(in.q_host, 100 + seed * 3);
    fill_normal(in.k_host, 101 + seed * 3);
    fill_normal(in.v_host, 102 + seed * 3);
    in.q = to_device(in.q_host);
    in.k = to_device(in.k_host);
    in.v = to_device(in.v_host);
    sets.push_back(std::move(in));
  }
  std::vector<Tensor> outs;
  for (int i = 0; i < 3; ++i) outs.push_back(Tensor::empty({s.batch, s.heads, s.seq_q, s.head_dim}, s.dtype, Device::cuda));
  if (f.name == std::string("naive") || f.name == std::string("inplace")) causal_mask_view(s);

  // First call (cuDNN builds its plan here), timed on the host.
  auto t0 = std::chrono::steady_clock::now();
  double plan_ms = 0.0;
  if (f.name == std::string("cudnn"))
    plan_ms = cuda::cudnn_sdpa_prepare(s, outs[0], sets[0].q, sets[0].k, sets[0].v, false).build_ms;
  f.run(s, sets[0], outs[0]);
  be().synchronize();
  double first_call_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (int i = 0; i < warmup; ++i) f.run(s, sets[i % 3], outs[i % 3]);
  be().synchronize();

  // Error vs fp64 on sampled rows of set 0.
  poison(outs[0]);
  f.run(s, sets[0], outs[0]);
  be().synchronize();
  ReferenceResult ref = compare_with_fp64(s, sets[0].q_host, sets[0].k_host, sets[0].v_host, to_host(outs[0]), nullptr,
                                         /*max_heads=*/2);

  // Peak extra memory of one forward.
  be().synchronize();
  memory::reset_peak(Device::cuda);
  const std::int64_t before = memory::stats(Device::cuda).current_bytes;
  f.run(s, sets[1], outs[1]);
  be().synchronize();
  const double peak_extra_mib = static_cast<double>(memory::stats(Device::cuda).peak_bytes - before) / (1 << 20);

  cudaStream_t stream = cuda::backend_stream();
  std::vector<cudaEvent_t> events(2 * static_cast<std::size_t>(reps));
  for (auto& e : events) ATTNPROF_CUDA_CHECK(cudaEventCreate(&e));
  std::vector<double> host_us;
  for (int i = 0; i < reps; ++i) {
    ATTNPROF_CUDA_CHECK(cudaEventRecord(events[2 * i], stream));
    auto h0 = std::chrono::steady_clock::now();
    f.run(s, sets[i % 3], outs[i % 3]);
    host_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - h0).count());
    ATTNPROF_CUDA_CHECK(cudaEventRecord(events[2 * i + 1], stream));
  }
  be().synchronize();
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    float elapsed = 0.0f;
    ATTNPROF_CUDA_CHECK(cudaEventElapsedTime(&elapsed, events[2 * i], events[2 * i + 1]));
    ms.push_back(elapsed);
  }
  for (auto& e : events) cudaEventDestroy(e);
  const double med = median(ms);
  const double flops = 4.0 * s.batch * s.heads * static_cast<double>(s.seq_q) * s.seq_k * s.head_dim / (s.causal ? 2.0 : 1.0);
  return fmt::format(
      "{{\"variant\": \"{}\", \"B\": {}, \"H\": {}, \"S\": {}, \"D\": {}, \"causal\": {}, \"median_ms\": {:.4f}, "
      "\"min_ms\": {:.4f}, \"tflops\": {:.1f}, \"host_us_per_fwd\": {:.1f}, \"first_call_ms\": {:.1f}, \"plan_build_ms\": {:.1f}, "
      "\"peak_extra_mib\": {:.1f}, \"device_work_per_fwd\": {}, \"rel_err_vs_fp64\": {:.2e}, \"unwritten\": {}}}",
      f.name, s.batch, s.heads, s.seq_q, s.head_dim, s.causal ? "true" : "false", med, *std::min_element(ms.begin(), ms.end()),
      flops / (med * 1e-3) / 1e12, median(host_us), first_call_ms, plan_ms, peak_extra_mib, f.kernels, ref.rel_error,
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
    std::vector<Forward> all = forwards();
    const char* outer = std::getenv("ATTNPROF_FLASH_KERNEL");
    const std::string outer_flash_kernel = outer == nullptr ? "" : outer;
    std::string lines;
    for (const std::string& shape : split(shapes, ',')) {
      AttentionSpec s = parse_shape(shape, causal, dtype);
      for (const std::string& name : split(variants, ',')) {
        std::string base = name;
        unsetenv("ATTNPROF_FLASH_CONFIG");
        if (outer_flash_kernel.empty())  // a plain variant runs with the caller's ATTNPROF_FLASH_KERNEL
          unsetenv("ATTNPROF_FLASH_KERNEL");
        else
          setenv("ATTNPROF_FLASH_KERNEL", outer_flash_kernel.c_str(), 1);
        if (auto at = name.find('@'); at != std::string::npos) {
          base = name.substr(0, at);
          const std::string suffix = name.substr(at + 1);
          if (suffix.rfind("sm", 0) == 0)  // flash@sm80 | @sm90 | @sm90-m128 | @sm90-persistent | @sm90-serial
            setenv("ATTNPROF_FLASH_KERNEL", suffix.c_str(), 1);
          else  // flash@k: tile configuration k of the sm80 kernel
            setenv("ATTNPROF_FLASH_CONFIG", suffix.c_str(), 1);
        }
        auto f = std::find_if(all.begin(), all.end(), [&](const Forward& x) { return base == x.name; });
        if (f == all.end()) throw UsageError(fmt::format("--variants {}: allowed naive|inplace|math|fused|efficient|flash|cudnn", name));
        // S² variants at S=16384 need tens of GiB; they run like PyTorch's (which needs the same).
        std::string line;
        try {
          line = run_one(*f, s, s.seq_q >= 16384 ? std::max(3, reps / 3) : reps, warmup);
          if (base != name) line.replace(line.find(base), base.size(), name);
        } catch (const Error& e) {
          std::string why = std::string(e.what()).substr(0, 300);
          std::replace(why.begin(), why.end(), '"', '\'');
          line = fmt::format("{{\"variant\": \"{}\", \"B\": {}, \"H\": {}, \"S\": {}, \"D\": {}, \"error\": \"{}\"}}", name,
                             s.batch, s.heads, s.seq_q, s.head_dim, why);
        }
        std::puts(line.c_str());
        std::fflush(stdout);
        lines += line + "\n";
      }
      g_causal_mask = Tensor();
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
