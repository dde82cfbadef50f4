#include <attnprof/attention.h>
#include <attnprof/error.h>
#include <attnprof/memory.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace attnprof {

std::string_view layout_name(Layout layout) { return layout == Layout::bhsd ? "bhsd" : "bshd"; }

Layout parse_layout(std::string_view name) {
  if (name == "bhsd") return Layout::bhsd;
  if (name == "bshd") return Layout::bshd;
  throw UsageError("layout: unknown layout '" + std::string(name) + "'; allowed: bhsd, bshd");
}

std::string_view causal_align_name(CausalAlign align) {
  return align == CausalAlign::top_left ? "top-left" : "bottom-right";
}

CausalAlign parse_causal_align(std::string_view name) {
  if (name == "top-left") return CausalAlign::top_left;
  if (name == "bottom-right") return CausalAlign::bottom_right;
  throw UsageError("causal_align: unknown alignment '" + std::string(name) + "'; allowed: top-left, bottom-right");
}

std::string_view pass_name(Pass pass) {
  switch (pass) {
    case Pass::forward: return "forward";
    case Pass::backward: return "backward";
    case Pass::train: return "train";
  }
  return "forward";
}

Pass parse_pass(std::string_view name) {
  if (name == "forward") return Pass::forward;
  if (name == "backward") return Pass::backward;
  if (name == "train") return Pass::train;
  throw UsageError("pass: unknown pass '" + std::string(name) + "'; allowed: forward, backward, train");
}

double AttentionSpec::softmax_scale() const { return 1.0 / std::sqrt(static_cast<double>(head_dim)); }

namespace {
// Σ over query rows i < seq_q of the keys row i sees, clamp(i + 1 + offset, 0, seq_k), in closed form.
double visible_pairs(std::int64_t seq_q, std::int64_t seq_k, std::int64_t offset) {
  const double sq = static_cast<double>(seq_q), sk = static_cast<double>(seq_k), o = static_cast<double>(offset);
  const double blind = std::clamp(-o, 0.0, sq);              // rows seeing no key: i + 1 + o <= 0
  const double full_from = std::clamp(sk - 1 - o, blind, sq);  // first row seeing every key
  // rows blind .. full_from-1 see i + 1 + o keys (an arithmetic series); rows from full_from see sk
  const double partial = (full_from - blind) * ((blind + 1 + o) + (full_from + o)) / 2.0;
  return partial + (sq - full_from) * sk;
}
}  // namespace

double AttentionSpec::visible_pairs() const {
  if (!causal) return static_cast<double>(seq_q) * static_cast<double>(seq_k);
  return attnprof::visible_pairs(seq_q, seq_k, causal_offset());
}

double AttentionSpec::flops() const {
  const double per_pair = 4.0 * static_cast<double>(batch) * static_cast<double>(heads) * static_cast<double>(head_dim);
  const double full = per_pair * static_cast<double>(seq_q) * static_cast<double>(seq_k);
  if (!causal) return full;
  // Top-left keeps the anchors' convention (half of the full count, whatever Sq and Sk are);
  // bottom-right counts the visible (i, j) pairs exactly, so the rows that see no key cost nothing.
  if (causal_align == CausalAlign::bottom_right) return per_pair * attnprof::visible_pairs(seq_q, seq_k, causal_offset());
  return full / 2.0;
}

namespace {
void require_positive(const char* flag, std::int64_t value) {
  if (value <= 0) throw UsageError(fmt::format("{}: must be a positive integer (got {})", flag, value));
}
std::int64_t checked_product(std::initializer_list<std::int64_t> factors, const char* what) {
  std::int64_t product = 1;
  for (std::int64_t f : factors) {
    if (__builtin_mul_overflow(product, f, &product)) {
      throw UsageError(fmt::format("shape: {} overflows a 64-bit element count; use smaller sizes", what));
    }
  }
  return product;
}
}  // namespace

void AttentionSpec::validate() const {
  require_positive("batch", batch);
  require_positive("heads", heads);
  require_positive("kv_heads", kv_heads);
  require_positive("seq_q", seq_q);
  require_positive("seq_k", seq_k);
  require_positive("head_dim", head_dim);
  if (heads % kv_heads != 0) {
    throw UsageError(fmt::format("kv_heads: must divide heads ({} heads, {} kv heads); allowed: a divisor of {}",
                                 heads, kv_heads, heads));
  }
  if (dtype != DType::bf16 && dtype != DType::fp16 && dtype != DType::fp32) {
    throw UsageError(fmt::format("dtype: {} is not an attention dtype; allowed: bf16, fp16, fp32", dtype_name(dtype)));
  }
  // The S×S scores (8 bytes per element at most) must be countable in 64 bits.
  checked_product({batch, heads, seq_q, seq_k, 8}, "batch·heads·seq·seq-k·8 bytes");
  checked_product({batch, heads, seq_q, head_dim, 8}, "batch·heads·seq·head-dim·8 bytes");
  checked_product({batch, kv_heads, seq_k, head_dim, 8}, "batch·kv-heads·seq-k·head-dim·8 bytes");
}

std::string AttentionSpec::shape_string() const {
  std::string s = fmt::format("{}x{}x{}x{}", batch, heads, seq_q, head_dim);
  if (kv_heads != heads) s += fmt::format(" kv-heads {}", kv_heads);
  if (seq_k != seq_q) s += fmt::format(" seq-k {}", seq_k);
  if (causal && causal_align != CausalAlign::top_left) s += fmt::format(" causal {}", causal_align_name(causal_align));
  return s;
}

namespace {
// [B, H, S, D] indexing over memory laid out per `layout`.
Tensor make_bhsd_view(std::int64_t b, std::int64_t h, std::int64_t s, std::int64_t d, DType dtype, Layout layout,
                      Device device) {
  if (layout == Layout::bhsd) return Tensor::empty({b, h, s, d}, dtype, device);
  return Tensor::empty_strided({b, h, s, d}, {s * h * d, d, h * d, 1}, dtype, device);
}

// A [B, h, s, D] tensor in the spec's layout on its device, seeded normal values drawn on the host.
Tensor seeded_tensor(const AttentionSpec& spec, std::int64_t h, std::int64_t s, std::uint64_t stream_seed) {
  Tensor host = make_bhsd_view(spec.batch, h, s, spec.head_dim, spec.dtype, spec.layout, Device::cpu);
  fill_normal(host, stream_seed);
  if (spec.device == Device::cpu) return host;
  Tensor dev = make_bhsd_view(spec.batch, h, s, spec.head_dim, spec.dtype, spec.layout, spec.device);
  memory::upload(dev, host);
  return dev;
}
}  // namespace

AttentionInputs make_inputs(const AttentionSpec& spec, std::uint64_t seed) {
  AttentionInputs in;
  in.q = seeded_tensor(spec, spec.heads, spec.seq_q, seed * 3 + 0);
  in.k = seeded_tensor(spec, spec.kv_heads, spec.seq_k, seed * 3 + 1);
  in.v = seeded_tensor(spec, spec.kv_heads, spec.seq_k, seed * 3 + 2);
  return in;
}

Tensor make_output(const AttentionSpec& spec) {
  return make_bhsd_view(spec.batch, spec.heads, spec.seq_q, spec.head_dim, spec.dtype, spec.layout, spec.device);
}

Tensor make_output_grad(const AttentionSpec& spec, std::uint64_t seed) {
  // seed·3 + {0, 1, 2} are q, k, v's streams (of this seed and its neighbours); dO's is the seed
  // through splitmix64's mixer, which no small seed·3 + i reaches.
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return seeded_tensor(spec, spec.heads, spec.seq_q, z ^ (z >> 31));
}

AttentionGrads make_grads(const AttentionSpec& spec) {
  AttentionGrads g;
  g.dq = make_output(spec);
  g.dk = make_bhsd_view(spec.batch, spec.kv_heads, spec.seq_k, spec.head_dim, spec.dtype, spec.layout, spec.device);
  g.dv = make_bhsd_view(spec.batch, spec.kv_heads, spec.seq_k, spec.head_dim, spec.dtype, spec.layout, spec.device);
  return g;
}

double pass_flops(const AttentionSpec& spec, Pass pass) {
  switch (pass) {
    case Pass::forward: return spec.flops();
    case Pass::backward: return 2.5 * spec.flops();
    case Pass::train: return 3.5 * spec.flops();
  }
  return spec.flops();
}

}  // namespace attnprof
