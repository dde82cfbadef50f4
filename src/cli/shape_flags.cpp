#include "cli/shape_flags.h"

#include <attnprof/error.h>
#include <fmt/format.h>
#include <omp.h>

#include <charconv>

#include "ops/backend.h"

namespace attnprof::cli {

const CLI::Validator& strict_integer() {
  static const CLI::Validator validator(
      [](std::string& text) -> std::string {
        std::int64_t value = 0;
        const char* end = text.data() + text.size();
        auto [ptr, ec] = std::from_chars(text.data(), end, value);
        if (ec == std::errc::result_out_of_range) return "'" + text + "' does not fit a 64-bit integer";
        if (ec != std::errc() || ptr != end) return "'" + text + "' is not an integer";
        return {};
      },
      "INT");
  return validator;
}

const CLI::Validator& non_empty_path() {
  static const CLI::Validator validator(
      [](std::string& text) -> std::string {
        return text.empty() ? "empty path; allowed: a file or directory name" : std::string();
      },
      "PATH");
  return validator;
}

CLI::Option* add_causal_align_flag(CLI::App& app, std::optional<std::string>& value) {
  return app.add_option("--causal-align", value,
                        "where the causal diagonal sits when seq != seq-k: top-left (PyTorch's is_causal, "
                        "default) or bottom-right (causal_lower_right; with seq > seq-k the first seq − seq-k "
                        "rows see no key)");
}

CausalAlign causal_align_from_flags(const std::optional<std::string>& value, bool causal) {
  if (!value) return CausalAlign::top_left;
  const CausalAlign align = parse_causal_align(*value);  // unknown → UsageError naming the allowed values
  if (!causal) {
    throw UsageError(fmt::format("--causal-align: cannot be used with --no-causal (got --causal-align {}: it places "
                                 "the causal mask's diagonal); allowed: top-left or bottom-right with the causal mask",
                                 *value));
  }
  return align;
}

void ShapeFlags::add_to(CLI::App& app) {
  const CLI::Validator& integer = strict_integer();
  app.add_option("--device", device, "cpu or cuda (default: cuda when a GPU is present, else cpu)");
  app.add_option("--batch,-b", batch, "batch size B")->check(integer)->capture_default_str();
  app.add_option("--heads", heads, "query heads H")->check(integer)->capture_default_str();
  app.add_option("--kv-heads", kv_heads, "key/value heads (GQA when fewer; must divide --heads; default: --heads)")
      ->check(integer);
  app.add_option("--seq,-s", seq, "query sequence length S")->check(integer)->capture_default_str();
  app.add_option("--seq-k", seq_k, "key/value sequence length (default: --seq)")->check(integer);
  app.add_option("--head-dim,-d", head_dim, "head dimension D")->check(integer)->capture_default_str();
  app.add_option("--dtype", dtype, "bf16, fp16 or fp32")->capture_default_str();
  CLI::Option* causal_flag = app.add_flag("--causal", causal, "causal mask, top-left aligned when Sq != Sk (default)");
  CLI::Option* no_causal_flag = app.add_flag("--no-causal", no_causal, "no mask");
  causal_flag->excludes(no_causal_flag);
  add_causal_align_flag(app, causal_align);
  app.add_option("--layout", layout, "bhsd ([B,H,S,D] in memory) or bshd ([B,S,H,D]; strides, no transposes)")
      ->capture_default_str();
  app.add_option("--threads", threads, "CPU threads (default: all cores)")->check(integer);
  app.add_option("--seed", seed, "seed of the normal inputs")->check(integer)->capture_default_str();
}

AttentionSpec ShapeFlags::to_spec(Device default_device) const {
  AttentionSpec spec;
  spec.device = device.empty() ? default_device : parse_device(device);
  spec.batch = batch;
  spec.heads = heads;
  spec.kv_heads = kv_heads.value_or(heads);
  spec.seq_q = seq;
  spec.seq_k = seq_k.value_or(seq);
  spec.head_dim = head_dim;
  spec.dtype = parse_dtype(dtype);
  if (spec.dtype != DType::bf16 && spec.dtype != DType::fp16 && spec.dtype != DType::fp32) {
    throw UsageError(fmt::format("--dtype: {} is not supported for attention; allowed: bf16, fp16, fp32", dtype));
  }
  spec.causal = !no_causal;
  spec.causal_align = causal_align_from_flags(causal_align, spec.causal);
  spec.layout = parse_layout(layout);
  spec.validate();
  if (spec.device == Device::cuda) (void)ops::backend(Device::cuda);  // a clear error when there is none
  return spec;
}

Device default_device() {
  try {
    if (ops::has_backend(Device::cuda)) return Device::cuda;
  } catch (const Error&) {
  }
  return Device::cpu;
}

void apply_threads(int threads) {
  if (threads < 0 || threads > 4096) {
    throw UsageError(fmt::format("--threads: must be between 1 and 4096, or 0 for all cores (got {})", threads));
  }
  if (threads > 0) omp_set_num_threads(threads);
}

}  // namespace attnprof::cli
