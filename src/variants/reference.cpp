#include "variants/reference.h"

#include "variants/reference_access.h"

#include <attnprof/error.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace attnprof::variants {
namespace detail {

double element(const Tensor& t, const std::int64_t* index) {
  std::int64_t offset = 0;
  for (int d = 0; d < t.rank(); ++d) offset += index[d] * t.stride(d);
  const char* p = static_cast<const char*>(t.raw()) + offset * static_cast<std::int64_t>(dtype_size(t.dtype()));
  switch (t.dtype()) {
    case DType::fp32: { float x; std::memcpy(&x, p, 4); return x; }
    case DType::fp64: { double x; std::memcpy(&x, p, 8); return x; }
    case DType::bf16: { bf16 x; std::memcpy(&x, p, 2); return bf16_to_float(x); }
    case DType::fp16: { fp16 x; std::memcpy(&x, p, 2); return fp16_to_float(x); }
    case DType::boolean: return *reinterpret_cast<const std::uint8_t*>(p);
    case DType::int32: { std::int32_t x; std::memcpy(&x, p, 4); return x; }
  }
  return 0;
}

void require_cpu(const Tensor& t, const char* what) {
  if (t.device() != Device::cpu) throw Error(fmt::format("reference: {} must be a CPU tensor", what));
}

}  // namespace detail

namespace {

using detail::element;
using detail::HeadCache;
using detail::require_cpu;

// Calls fn(byte pointer, index) for every element of t (any rank, any strides).
template <class Fn>
void for_each_element(const Tensor& t, Fn&& fn) {
  const int rank = t.rank();
  const std::int64_t es = static_cast<std::int64_t>(dtype_size(t.dtype()));
  std::vector<std::int64_t> index(static_cast<std::size_t>(rank), 0);
  const std::int64_t n = t.numel();
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t offset = 0;
    for (int d = 0; d < rank; ++d) offset += index[static_cast<std::size_t>(d)] * t.stride(d);
    fn(static_cast<char*>(t.raw()) + offset * es, index.data());
    for (int d = rank; d-- > 0;) {
      if (++index[static_cast<std::size_t>(d)] < t.size(d)) break;
      index[static_cast<std::size_t>(d)] = 0;
    }
  }
}

bool is_nan_bits(const char* p, DType dtype) {
  switch (dtype) {
    case DType::fp32: { float x; std::memcpy(&x, p, 4); return std::isnan(x); }
    case DType::fp64: { double x; std::memcpy(&x, p, 8); return std::isnan(x); }
    case DType::bf16: { std::uint16_t x; std::memcpy(&x, p, 2); return (x & 0x7f80u) == 0x7f80u && (x & 0x7fu) != 0; }
    case DType::fp16: { std::uint16_t x; std::memcpy(&x, p, 2); return (x & 0x7c00u) == 0x7c00u && (x & 0x3ffu) != 0; }
    default: return false;
  }
}

constexpr std::uint32_t kPoison32 = 0x7fc0deadu;
constexpr std::uint16_t kPoisonBf16 = 0x7fdeu;
constexpr std::uint16_t kPoisonFp16 = 0x7eadu;
constexpr std::uint64_t kPoison64 = 0x7ff8deaddeaddeadull;

bool is_poison(const char* p, DType dtype) {
  switch (dtype) {
    case DType::fp32: return std::memcmp(p, &kPoison32, 4) == 0;
    case DType::fp64: return std::memcmp(p, &kPoison64, 8) == 0;
    case DType::bf16: return std::memcmp(p, &kPoisonBf16, 2) == 0;
    case DType::fp16: return std::memcmp(p, &kPoisonFp16, 2) == 0;
    default: return false;
  }
}

// One reference row: out_row[d] for query (b, h, i), in fp64.
void reference_row(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v, std::int64_t b,
                   std::int64_t h, std::int64_t i, double* out_row, std::vector<double>& scores, HeadCache& cache) {
  const std::int64_t hk = h / (spec.heads / spec.kv_heads);
  cache.load(spec, k, v, b, hk);
  const std::int64_t visible = visible_keys(spec, i);
  const std::int64_t D = spec.head_dim;
  std::vector<double> qrow(static_cast<std::size_t>(D));
  for (std::int64_t d = 0; d < D; ++d) {
    const std::int64_t idx[4]{b, h, i, d};
    qrow[static_cast<std::size_t>(d)] = element(q, idx);
  }
  scores.assign(static_cast<std::size_t>(visible), 0.0);
  double max_score = -std::numeric_limits<double>::infinity();
  const double scale = spec.softmax_scale();
  for (std::int64_t j = 0; j < visible; ++j) {
    const double* krow = cache.k.data() + j * D;
    double s = 0;
    for (std::int64_t d = 0; d < D; ++d) s += qrow[static_cast<std::size_t>(d)] * krow[d];
    s *= scale;
    scores[static_cast<std::size_t>(j)] = s;
    max_score = std::max(max_score, s);
  }
  double sum = 0;
  for (double& s : scores) sum += (s = std::exp(s - max_score));
  for (std::int64_t d = 0; d < D; ++d) out_row[d] = 0;
  for (std::int64_t j = 0; j < visible; ++j) {
    const double p = scores[static_cast<std::size_t>(j)] / sum;
    const double* vrow = cache.v.data() + j * D;
    for (std::int64_t d = 0; d < D; ++d) out_row[d] += p * vrow[d];
  }
}

}  // namespace

std::string ErrorReport::scope() const {
  std::string text = !sampled            ? fmt::format("all {} rows", rows_checked)
                     : masked_rows == 0 ? fmt::format("{} sampled rows of {}", rows_checked, total_rows)
                                        : fmt::format("{} sampled rows of the {} that see a key", rows_checked,
                                                      total_rows - masked_rows);
  if (masked_rows > 0) text += fmt::format(" + {} fully masked rows", masked_rows);
  return text;
}

std::int64_t fully_masked_rows_per_head(const AttentionSpec& spec) {
  const std::int64_t offset = spec.causal_offset();
  return offset >= 0 ? 0 : std::min(spec.seq_q, -offset);
}

std::int64_t visible_keys(const AttentionSpec& spec, std::int64_t i) {
  if (!spec.causal) return spec.seq_k;
  return std::clamp<std::int64_t>(i + 1 + spec.causal_offset(), 0, spec.seq_k);
}

Tensor reference_attention(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v) {
  require_cpu(q, "q");
  require_cpu(k, "k");
  require_cpu(v, "v");
  Tensor ref = Tensor::empty({spec.batch, spec.heads, spec.seq_q, spec.head_dim}, DType::fp64, Device::cpu);
  const std::int64_t rows = spec.batch * spec.heads * spec.seq_q;
#pragma omp parallel
  {
    std::vector<double> scores;
    HeadCache cache;
#pragma omp for schedule(dynamic, 16)
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t b = r / (spec.heads * spec.seq_q), h = (r / spec.seq_q) % spec.heads, i = r % spec.seq_q;
      reference_row(spec, q, k, v, b, h, i, ref.data<double>() + r * spec.head_dim, scores, cache);
    }
  }
  return ref;
}

ErrorReport check_against_reference(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& out, std::int64_t max_rows) {
  require_cpu(out, "out");
  require_cpu(q, "q");
  ErrorReport report;
  report.total_rows = spec.batch * spec.heads * spec.seq_q;
  report.sampled = report.total_rows > max_rows;
  const std::int64_t candidates = report.sampled ? max_rows : report.total_rows;
  report.nan_count = count_nan(out);
  report.unwritten = count_poison(out);
  const std::int64_t D = spec.head_dim;

  // Fully masked rows: scanned, classified, left out of the error.
  const std::int64_t masked_per_head = fully_masked_rows_per_head(spec);
  std::int64_t masked_nan = 0, masked_zero = 0, nan_in_masked = 0;
#pragma omp parallel for schedule(static) reduction(+ : masked_nan, masked_zero, nan_in_masked)
  for (std::int64_t bh = 0; bh < spec.batch * spec.heads; ++bh) {
    for (std::int64_t i = 0; i < masked_per_head; ++i) {
      bool all_nan = true, all_zero = true;
      for (std::int64_t d = 0; d < D; ++d) {
        const std::int64_t idx[4]{bh / spec.heads, bh % spec.heads, i, d};
        const double x = element(out, idx);
        nan_in_masked += std::isnan(x);
        all_nan = all_nan && std::isnan(x);
        all_zero = all_zero && x == 0.0;
      }
      masked_nan += all_nan;
      masked_zero += all_zero;
    }
  }
  report.masked_rows = spec.batch * spec.heads * masked_per_head;
  report.masked_rows_nan = masked_nan;
  report.masked_rows_zero = masked_zero;

  double diff2 = 0, ref2 = 0;
  std::int64_t checked = 0;
#pragma omp parallel reduction(+ : diff2, ref2, checked)
  {
    std::vector<double> scores, ref_row(static_cast<std::size_t>(D));
    HeadCache cache;
#pragma omp for schedule(dynamic, 16)
    for (std::int64_t n = 0; n < candidates; ++n) {
      const std::int64_t r = report.sampled ? (max_rows > 1 ? n * (report.total_rows - 1) / (max_rows - 1) : 0) : n;
      const std::int64_t b = r / (spec.heads * spec.seq_q), h = (r / spec.seq_q) % spec.heads, i = r % spec.seq_q;
      if (i < masked_per_head) continue;
      ++checked;
      reference_row(spec, q, k, v, b, h, i, ref_row.data(), scores, cache);
      for (std::int64_t d = 0; d < D; ++d) {
        const std::int64_t idx[4]{b, h, i, d};
        const double diff = element(out, idx) - ref_row[static_cast<std::size_t>(d)];
        diff2 += diff * diff;
        ref2 += ref_row[static_cast<std::size_t>(d)] * ref_row[static_cast<std::size_t>(d)];
      }
    }
  }
  report.rows_checked = checked;
  report.rel_err = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  // Every NaN outside the masked rows is in a defined row, sampled or not.
  report.nan_in_defined_rows = report.nan_count - nan_in_masked;
  return report;
}

void poison_nan(Tensor& t) {
  require_cpu(t, "poisoned tensor");
  const DType dtype = t.dtype();
  for_each_element(t, [&](char* p, const std::int64_t*) {
    switch (dtype) {
      case DType::fp32: std::memcpy(p, &kPoison32, 4); break;
      case DType::fp64: std::memcpy(p, &kPoison64, 8); break;
      case DType::bf16: std::memcpy(p, &kPoisonBf16, 2); break;
      case DType::fp16: std::memcpy(p, &kPoisonFp16, 2); break;
      default: throw Error("poison_nan: floating-point tensors only, got " + t.describe());
    }
  });
}

std::int64_t count_nan(const Tensor& t) {
  require_cpu(t, "tensor");
  std::int64_t n = 0;
  for_each_element(t, [&](char* p, const std::int64_t*) { n += is_nan_bits(p, t.dtype()); });
  return n;
}

std::int64_t count_poison(const Tensor& t) {
  require_cpu(t, "tensor");
  std::int64_t n = 0;
  for_each_element(t, [&](char* p, const std::int64_t*) { n += is_poison(p, t.dtype()); });
  return n;
}

std::optional<std::string> find_nonfinite(const Tensor& t) {
  require_cpu(t, "tensor");
  std::int64_t count = 0;
  std::string first;
  for_each_element(t, [&](char* p, const std::int64_t* index) {
    (void)p;
    const double x = element(t, index);
    if (std::isfinite(x)) return;
    if (count++ == 0) {
      std::string where;
      for (int d = 0; d < t.rank(); ++d) where += (d ? ", " : "") + std::to_string(index[d]);
      first = fmt::format("{} at [{}]", std::isnan(x) ? "nan" : (x > 0 ? "inf" : "-inf"), where);
    }
  });
  if (count == 0) return std::nullopt;
  return fmt::format("{} non-finite value{} (first: {})", count, count == 1 ? "" : "s", first);
}

}  // namespace attnprof::variants
