#pragma once
// The fp64 oracle: attention computed in double from the stored input values, the relative error
// ‖out − ref‖ / ‖ref‖ of a variant's output, and the NaN-poisoning helpers that prove every
// output element was written. CPU tensors (the runner copies device outputs back first).
#include <attnprof/attention.h>
#include <attnprof/tensor.h>

#include <cstdint>
#include <optional>
#include <string>

namespace attnprof::variants {

struct ErrorReport {
  double rel_err = 0;             // ‖out − ref‖ / ‖ref‖ over the checked rows (NaN if out has NaN there)
  std::int64_t rows_checked = 0;
  std::int64_t total_rows = 0;    // B·H·Sq
  bool sampled = false;           // rows_checked < total_rows: a fixed, evenly spaced sample
  std::int64_t nan_count = 0;     // NaN elements anywhere in out (unwritten ones included)
  std::int64_t unwritten = 0;     // elements still holding poison_nan's bit pattern
  std::string scope() const;      // "all 1024 rows" or "4096 sampled rows of 131072"
};

// fp64 attention of q, k, v as `spec` describes them (GQA, causal top-left, any strides):
// contiguous fp64 [B, H, Sq, D]. A row with no visible key is 0.
Tensor reference_attention(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v);

// Checks every row when B·H·Sq ≤ max_rows, else max_rows evenly spaced rows (the first and the
// last included), the same rows on every call.
ErrorReport check_against_reference(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& out, std::int64_t max_rows = 4096);

// Fills t with a quiet-NaN bit pattern no kernel computes (fp32 0x7fc0dead, bf16 0x7fde,
// fp16 0x7ead, fp64 0x7ff8deaddeaddead), so unwritten elements can be told apart.
void poison_nan(Tensor& t);
std::int64_t count_nan(const Tensor& t);
std::int64_t count_poison(const Tensor& t);

// nullopt when every element is finite; else e.g. "2 non-finite values (first: nan at [0, 3, 17, 5])".
std::optional<std::string> find_nonfinite(const Tensor& t);

}  // namespace attnprof::variants
