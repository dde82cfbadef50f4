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
  // ‖out − ref‖ / ‖ref‖ over the checked rows that are defined (see below; NaN if out has NaN there)
  double rel_err = 0;
  std::int64_t rows_checked = 0;  // defined rows compared with the reference
  std::int64_t total_rows = 0;    // B·H·Sq
  bool sampled = false;           // a fixed, evenly spaced sample of the rows was compared
  std::int64_t nan_count = 0;     // NaN elements anywhere in out (unwritten ones included)
  std::int64_t unwritten = 0;     // elements still holding poison_nan's bit pattern
  // Fully masked rows (causal bottom-right with Sq > Sk: query rows i < Sq − Sk see no key). Their
  // result is a convention, not a number to compare: NaN in PyTorch's naive module (softmax of an
  // all −inf row), 0 in its fused and math paths. Every one of them is classified (never sampled).
  std::int64_t masked_rows = 0;
  std::int64_t masked_rows_nan = 0;    // written as all NaN
  std::int64_t masked_rows_zero = 0;   // written as all zeros
  std::int64_t nan_in_defined_rows = 0;  // NaN elements in rows that see at least one key
  // NaN only where PyTorch's naive module gives it too: some masked rows are NaN, none elsewhere.
  bool nan_only_in_masked_rows() const { return nan_count > 0 && nan_in_defined_rows == 0; }
  // "all 1024 rows", "4096 sampled rows of 131072"; with masked rows "... of the N that see a key"
  // and " + 192 fully masked rows"
  std::string scope() const;
};

// Query rows of one (b, h) that see no key: max(0, −causal_offset) capped at Sq (0 unless causal
// bottom-right with Sq > Sk).
std::int64_t fully_masked_rows_per_head(const AttentionSpec& spec);
// Keys query row i sees: Sk without causal, else clamp(i + 1 + causal_offset, 0, Sk).
std::int64_t visible_keys(const AttentionSpec& spec, std::int64_t i);

// fp64 attention of q, k, v as `spec` describes them (GQA, causal with spec.causal_offset(), any
// strides): contiguous fp64 [B, H, Sq, D]. A row with no visible key is 0 (the NaN-safe convention).
Tensor reference_attention(const AttentionSpec& spec, const Tensor& q, const Tensor& k, const Tensor& v);

// Checks every defined row when B·H·Sq ≤ max_rows, else max_rows evenly spaced rows (the first and
// the last included; fully masked ones skipped), the same rows on every call. Fully masked rows are
// all scanned and classified (masked_rows_nan / masked_rows_zero), never compared.
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
