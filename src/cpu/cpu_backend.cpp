// The CPU Backend: each call is one piece of work, recorded as one `cpu_kernel` range whose name
// says what ran (gemm, mul, copy, fill, masked_fill, where, tril, triu, logical_not, isneginf,
// all, add, softmax, scale_mask_softmax, softmax_backward, scale_softmax_backward,
// sum_head_groups, flash_attention, efficient_attention and their _backward) and in which dtype.
#include "cpu/cpu_backend.h"

#include <attnprof/error.h>
#include <attnprof/profiler.h>

#include <fmt/format.h>
#include <omp.h>

#include <string>

#include "core/saturating.h"
#include "cpu/attention_backward.h"
#include "cpu/cpu_features.h"
#include "cpu/elementwise.h"
#include "cpu/fused_attention.h"
#include "cpu/gemm.h"
#include "cpu/kernel_names.h"
#include "cpu/softmax.h"

namespace attnprof::cpu {
namespace {

using trace::Category;

std::vector<std::string>* g_kernel_log = nullptr;

// One piece of work: a `cpu_kernel` range named for it (and a line in the test log when installed).
class KernelRange {
 public:
  explicit KernelRange(const char* name) : range_(Category::cpu_kernel, name) {
    if (g_kernel_log != nullptr) g_kernel_log->emplace_back(name);
  }

 private:
  profiler::Range range_;
};

const char* named(const char* op, DType dtype) {
  return intern_name(fmt::format("cpu::{}_{}", op, dtype_name(dtype)));
}

void require_cpu(const char* op, std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors) {
    if (t->device() != Device::cpu) throw Error(fmt::format("cpu {}: {} is not a CPU tensor", op, t->describe()));
  }
}

// The tile configurations of the two fused variants (see attention_tiles.h for what they mean).
// flash: 64 query rows × 256 keys: the fp32 score tile (64 KiB) and the bf16 probabilities stay in
// L2 beside the K/V panels; per-row softmax bookkeeping is amortised over 256 keys. Measured on the
// Zen 5 dev machine, 1 thread, causal, GFLOP/s per CPU-second (D=64 fp32 / bf16, D=128 fp32 / bf16):
// 64×256: 216 / 359, 186 / 327; 128×128: 201 / 337, 186 / 334; 192×192 and 64×512 were 3-8% slower.
constexpr TileConfig kFlashTiles{64, 256, true};
// efficient: xformers-style 64×64 tiles, K/V packed tile by tile as each q-block reaches them,
// static schedule in memory order.
constexpr TileConfig kEfficientTiles{64, 64, false};
// The backward's (attention_backward_tiles.h): a work item owns block_k keys' dK/dV and walks the
// group's q-blocks of block_q rows.
constexpr BackwardTiles kFlashBackwardTiles{64, 128};
constexpr BackwardTiles kEfficientBackwardTiles{64, 64};
// The AMX path (attention_amx.cpp) tiles 32 × 32: both configurations must divide into it.
static_assert(kFlashTiles.block_q % 32 == 0 && kFlashTiles.block_k % 32 == 0);
static_assert(kEfficientTiles.block_q % 32 == 0 && kEfficientTiles.block_k % 32 == 0);

// The spec's shape, scale and masking (no tensors yet).
FusedProblem problem_shape(const AttentionSpec& spec) {
  FusedProblem p;
  p.dtype = spec.dtype;
  p.batch = spec.batch;
  p.heads = spec.heads;
  p.kv_heads = spec.kv_heads;
  p.seq_q = spec.seq_q;
  p.seq_k = spec.seq_k;
  p.head_dim = spec.head_dim;
  p.scale = static_cast<float>(spec.softmax_scale());
  p.causal = spec.causal;
  p.causal_offset = spec.causal_offset();
  return p;
}

void copy_strides(std::int64_t* dst, const Tensor& t) {
  for (int d = 0; d < 4; ++d) dst[d] = t.stride(d);
}

// The backward reads out and lse through the same problem, so both are const here.
FusedProblem fused_problem(const AttentionSpec& spec, const Tensor& out, const Tensor& q, const Tensor& k,
                           const Tensor& v, const Tensor* lse) {
  FusedProblem p = problem_shape(spec);
  p.q = q.raw();
  p.k = k.raw();
  p.v = v.raw();
  p.out = out.raw();
  copy_strides(p.q_strides, q);
  copy_strides(p.k_strides, k);
  copy_strides(p.v_strides, v);
  copy_strides(p.out_strides, out);
  if (lse != nullptr) {
    if (lse->dtype() != DType::fp32 || !lse->is_contiguous() || lse->numel() != spec.batch * spec.heads * spec.seq_q) {
      throw Error("cpu attention: lse must be a contiguous fp32 [B, H, Sq] tensor, got " + lse->describe());
    }
    p.lse = lse->data<float>();
  }
  return p;
}

void expect_operand(const AttentionSpec& spec, const Tensor& t, const char* what, std::int64_t heads,
                    std::int64_t seq) {
  const std::vector<std::int64_t> want{spec.batch, heads, seq, spec.head_dim};
  if (t.rank() != 4 || t.shape() != want || t.dtype() != spec.dtype) {
    throw Error(fmt::format("cpu attention: {} is {}, the spec needs {}[{}, {}, {}, {}]", what, t.describe(),
                            dtype_name(spec.dtype), spec.batch, heads, seq, spec.head_dim));
  }
}

void check_fused_operands(const AttentionSpec& spec, const Tensor& out, const Tensor& q, const Tensor& k,
                          const Tensor& v) {
  expect_operand(spec, q, "q", spec.heads, spec.seq_q);
  expect_operand(spec, k, "k", spec.kv_heads, spec.seq_k);
  expect_operand(spec, v, "v", spec.kv_heads, spec.seq_k);
  expect_operand(spec, out, "out", spec.heads, spec.seq_q);
}

// The tensors of one backward, destinations first.
struct BackwardOperands {
  Tensor& dq;
  Tensor& dk;
  Tensor& dv;
  const Tensor& q;
  const Tensor& k;
  const Tensor& v;
  const Tensor& out;
  const Tensor& lse;
  const Tensor& dout;
};

BackwardProblem backward_problem(const AttentionSpec& spec, const BackwardOperands& o) {
  check_fused_operands(spec, o.out, o.q, o.k, o.v);
  expect_operand(spec, o.dout, "dout", spec.heads, spec.seq_q);
  expect_operand(spec, o.dq, "dq", spec.heads, spec.seq_q);
  expect_operand(spec, o.dk, "dk", spec.kv_heads, spec.seq_k);
  expect_operand(spec, o.dv, "dv", spec.kv_heads, spec.seq_k);
  BackwardProblem p;
  p.forward = fused_problem(spec, o.out, o.q, o.k, o.v, &o.lse);
  p.dout = o.dout.raw();
  p.dq = o.dq.raw();
  p.dk = o.dk.raw();
  p.dv = o.dv.raw();
  copy_strides(p.dout_strides, o.dout);
  copy_strides(p.dq_strides, o.dq);
  copy_strides(p.dk_strides, o.dk);
  copy_strides(p.dv_strides, o.dv);
  return p;
}

class CpuBackend final : public ops::Backend {
 public:
  void batched_gemm(Tensor& dst, const Tensor& a, const Tensor& bm, bool transpose_b, float alpha,
                    bool allow_tensor_cores) override {
    (void)allow_tensor_cores;  // the CPU has no tensor cores: every GEMM here is fp32 FMA already
    require_cpu("gemm", {&dst, &a, &bm});
    KernelRange r(gemm_kernel_name(dst, a, bm, transpose_b));
    cpu::batched_gemm(dst, a, bm, transpose_b, alpha);
  }
  void copy(Tensor& dst, const Tensor& src) override {
    require_cpu("copy", {&dst, &src});
    KernelRange r(intern_name(fmt::format("cpu::copy_{}_to_{}", dtype_name(src.dtype()), dtype_name(dst.dtype()))));
    kernels::copy(dst, src);
  }
  void fill(Tensor& dst, double value) override {
    require_cpu("fill", {&dst});
    KernelRange r(named("fill", dst.dtype()));
    kernels::fill(dst, value);
  }
  void mul_scalar(Tensor& dst, const Tensor& src, double scalar) override {
    require_cpu("mul", {&dst, &src});
    KernelRange r(named("mul", dst.dtype()));
    kernels::mul_scalar(dst, src, scalar);
  }
  void add(Tensor& dst, const Tensor& a, const Tensor& b) override {
    require_cpu("add", {&dst, &a, &b});
    KernelRange r(named("add", dst.dtype()));
    kernels::add(dst, a, b);
  }
  void masked_fill(Tensor& dst, const Tensor& src, const Tensor& mask, double value) override {
    require_cpu("masked_fill", {&dst, &src, &mask});
    KernelRange r(named("masked_fill", dst.dtype()));
    kernels::masked_fill(dst, src, mask, value);
  }
  void where(Tensor& dst, const Tensor& condition, const Tensor& if_true, const Tensor& if_false) override {
    require_cpu("where", {&dst, &condition, &if_true, &if_false});
    KernelRange r(named("where", dst.dtype()));
    kernels::where(dst, condition, if_true, if_false);
  }
  void logical_not(Tensor& dst, const Tensor& src) override {
    require_cpu("logical_not", {&dst, &src});
    KernelRange r(named("logical_not", dst.dtype()));
    kernels::logical_not(dst, src);
  }
  void isneginf(Tensor& dst, const Tensor& src) override {
    require_cpu("isneginf", {&dst, &src});
    KernelRange r(named("isneginf", src.dtype()));
    kernels::isneginf(dst, src);
  }
  void tril(Tensor& dst, const Tensor& src, std::int64_t diagonal) override {
    require_cpu("tril", {&dst, &src});
    KernelRange r(named("tril", dst.dtype()));
    kernels::triangle(dst, src, diagonal, false);
  }
  void triu(Tensor& dst, const Tensor& src, std::int64_t diagonal) override {
    require_cpu("triu", {&dst, &src});
    KernelRange r(named("triu", dst.dtype()));
    kernels::triangle(dst, src, diagonal, true);
  }
  void softmax_lastdim(Tensor& dst, const Tensor& src) override {
    require_cpu("softmax", {&dst, &src});
    KernelRange r(named("softmax", dst.dtype()));
    kernels::softmax_lastdim(dst, src);
  }
  void all_lastdim(Tensor& dst, const Tensor& src) override {
    require_cpu("all", {&dst, &src});
    KernelRange r(named("all", src.dtype()));
    kernels::all_lastdim(dst, src);
  }
  void scale_mask_softmax(Tensor& dst, const Tensor& src, double scale, bool causal,
                          std::int64_t causal_offset) override {
    require_cpu("scale_mask_softmax", {&dst, &src});
    KernelRange r(named("scale_mask_softmax", dst.dtype()));
    kernels::scale_mask_softmax(dst, src, scale, causal, causal_offset);
  }
  void softmax_backward(Tensor& dst, const Tensor& grad, const Tensor& probs, double scale) override {
    require_cpu("softmax_backward", {&dst, &grad, &probs});
    KernelRange r(named(scale == 1.0 ? "softmax_backward" : "scale_softmax_backward", dst.dtype()));
    kernels::softmax_backward(dst, grad, probs, scale);
  }
  void sum_head_groups(Tensor& dst, const Tensor& src) override {
    require_cpu("sum_head_groups", {&dst, &src});
    KernelRange r(named("sum_head_groups", dst.dtype()));
    kernels::sum_head_groups(dst, src);
  }
  void attention_efficient(const AttentionSpec& spec, Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                           Tensor* lse) override {
    run_fused("efficient_attention", kEfficientTiles, spec, out, q, k, v, lse);
  }
  void attention_flash(const AttentionSpec& spec, Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                       Tensor* lse) override {
    run_fused("flash_attention", kFlashTiles, spec, out, q, k, v, lse);
  }
  void attention_efficient_backward(const AttentionSpec& spec, Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& q,
                                    const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                                    const Tensor& dout) override {
    run_fused_backward("efficient_attention_backward", kEfficientBackwardTiles, spec,
                       {dq, dk, dv, q, k, v, out, lse, dout});
  }
  void attention_flash_backward(const AttentionSpec& spec, Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& q,
                                const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                                const Tensor& dout) override {
    run_fused_backward("flash_attention_backward", kFlashBackwardTiles, spec, {dq, dk, dv, q, k, v, out, lse, dout});
  }
  std::int64_t fused_workspace_bytes(const AttentionSpec& spec, bool flash) const override {
    return cpu::fused_workspace_bytes(spec, flash);
  }
  std::int64_t fused_backward_workspace_bytes(const AttentionSpec& spec, bool flash) const override {
    return cpu::fused_backward_workspace_bytes(spec, flash);
  }
  std::optional<std::string> fused_refusal(const AttentionSpec& spec) const override {
    if (spec.dtype != DType::bf16 && spec.dtype != DType::fp16 && spec.dtype != DType::fp32) {
      return fmt::format("dtype {}: the CPU fused kernels take bf16, fp16, fp32", dtype_name(spec.dtype));
    }
    if (spec.head_dim > kMaxFusedHeadDim) {
      return fmt::format("head_dim {}: the CPU fused kernels take head dims 1..{}", spec.head_dim, kMaxFusedHeadDim);
    }
    return std::nullopt;
  }
  void synchronize() override {}

 private:
  static constexpr std::int64_t kMaxFusedHeadDim = 512;

  void run_fused(const char* what, const TileConfig& tiles, const AttentionSpec& spec, Tensor& out, const Tensor& q,
                 const Tensor& k, const Tensor& v, Tensor* lse) {
    require_cpu(what, {&out, &q, &k, &v});
    if (auto why = fused_refusal(spec)) throw UsageError(*why);
    check_fused_operands(spec, out, q, k, v);
    const Isa isa = fused_isa(spec.dtype, kernel_isa());
    KernelRange r(fused_kernel_name(what, spec.dtype, isa));
    const FusedProblem problem = fused_problem(spec, out, q, k, v, lse);
    const int threads = omp_get_max_threads();
    const FusedWorkspace ws = fused_workspace(problem, tiles, isa, threads);
    // Workspace through the allocator, so peak-memory statistics see it.
    Tensor prepack, scratch;
    if (ws.prepack_bytes > 0) prepack = Tensor::empty({ws.prepack_bytes}, DType::boolean, Device::cpu);
    scratch = Tensor::empty({threads * ws.per_thread_bytes}, DType::boolean, Device::cpu);
    fused_attention(problem, tiles, isa, prepack.defined() ? prepack.raw() : nullptr, scratch.raw(), threads);
  }

  void run_fused_backward(const char* what, const BackwardTiles& tiles, const AttentionSpec& spec,
                          const BackwardOperands& o) {
    require_cpu(what, {&o.dq, &o.dk, &o.dv, &o.q, &o.k, &o.v, &o.out, &o.lse, &o.dout});
    if (auto why = fused_refusal(spec)) throw UsageError(*why);
    const BackwardProblem problem = backward_problem(spec, o);
    const Isa isa = backward_isa(kernel_isa());
    KernelRange r(fused_kernel_name(what, spec.dtype, isa));
    const int threads = omp_get_max_threads();
    const BackwardWorkspace ws = backward_workspace(problem, tiles, threads);
    // Workspace through the allocator, so peak-memory statistics see it.
    Tensor shared = Tensor::empty({ws.shared_bytes}, DType::boolean, Device::cpu);
    Tensor scratch = Tensor::empty({sat_mul(threads, ws.per_thread_bytes)}, DType::boolean, Device::cpu);
    attention_backward(problem, tiles, isa, shared.raw(), scratch.raw(), threads);
  }
};

}  // namespace

void set_kernel_log(std::vector<std::string>* log) { g_kernel_log = log; }

ops::Backend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

// Bytes the fused kernels allocate for one forward (variants' workspace_estimate uses it).
std::int64_t fused_workspace_bytes(const AttentionSpec& spec, bool flash) {
  const FusedProblem p = problem_shape(spec);
  const FusedWorkspace ws = fused_workspace(p, flash ? kFlashTiles : kEfficientTiles, fused_isa(spec.dtype, kernel_isa()),
                                            omp_get_max_threads());
  return sat_add(ws.prepack_bytes, sat_mul(ws.per_thread_bytes, omp_get_max_threads()));
}

std::int64_t fused_backward_workspace_bytes(const AttentionSpec& spec, bool flash) {
  BackwardProblem p;
  p.forward = problem_shape(spec);
  const BackwardWorkspace ws =
      backward_workspace(p, flash ? kFlashBackwardTiles : kEfficientBackwardTiles, omp_get_max_threads());
  return sat_add(ws.shared_bytes, sat_mul(ws.per_thread_bytes, omp_get_max_threads()));
}

}  // namespace attnprof::cpu
