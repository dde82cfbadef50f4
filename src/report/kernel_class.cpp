#include "report/kernel_class.h"

#include <algorithm>
#include <cctype>

#include "core/utf8.h"

namespace attnprof::report {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool contains(const std::string& haystack, std::string_view needle) { return haystack.find(needle) != std::string::npos; }

bool contains_any(const std::string& haystack, std::initializer_list<std::string_view> needles) {
  for (std::string_view n : needles) {
    if (contains(haystack, n)) return true;
  }
  return false;
}

}  // namespace

const char* kernel_class_name(KernelClass kind) {
  switch (kind) {
    case KernelClass::gemm: return "gemm";
    case KernelClass::elementwise: return "elementwise";
    case KernelClass::copy: return "copy";
    case KernelClass::mask: return "mask";
    case KernelClass::softmax: return "softmax";
    case KernelClass::attention: return "attention";
    case KernelClass::memset: return "memset";
    case KernelClass::memcpy: return "memcpy";
    case KernelClass::other: return "other";
  }
  return "other";
}

bool has_name_token(std::string_view name, std::string_view word) {
  std::string wanted = lower(word);
  std::string piece;
  auto flush = [&] {
    bool hit = piece == wanted;
    piece.clear();
    return hit;
  };
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      piece += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (flush()) {
      return true;
    }
  }
  return flush();
}

// Order matters: a fused attention kernel may mention gemm or softmax in its template
// arguments, a copy kernel is an elementwise kernel, and masked_fill's kernel is one too.
KernelClass classify_kernel(std::string_view name) {
  const std::string n = lower(name);
  if (n.rfind("memcpy", 0) == 0) return KernelClass::memcpy;
  if (n.rfind("memset", 0) == 0) return KernelClass::memset;
  if (contains_any(n, {"flash_fwd", "flash_attention", "efficient_attention", "fmha", "sdpa", "fused_attention",
                       "attention_fwd", "flash_fprop", "fprop_flash"}) ||
      has_name_token(n, "flash") || has_name_token(n, "attention")) {
    return KernelClass::attention;
  }
  if (contains(n, "softmax")) return KernelClass::softmax;
  // A GEMM from evidence in its own name: FBGEMM's namespace ("fbgemm_gpu::…embedding…",
  // "…permute…") says which library, not that the kernel multiplies matrices.
  std::string own = n;
  for (std::size_t at = own.find("fbgemm"); at != std::string::npos; at = own.find("fbgemm", at)) own.erase(at, 6);
  if (contains_any(own, {"gemm", "nvjet", "xmma", "matmul", "hgmma", "wgmma"}) || has_name_token(own, "bmm") ||
      has_name_token(own, "mm")) {
    return KernelClass::gemm;
  }
  if (contains_any(n, {"masked_fill", "tril", "triu", "logical_not", "fillfunctor<bool>", "causal_mask"}) ||
      has_name_token(n, "mask")) {
    return KernelClass::mask;
  }
  if (contains_any(n, {"copy", "clone", "convert", "cast_kernel"})) return KernelClass::copy;
  if (contains_any(n, {"elementwise", "functor", "reduce_kernel", "isneginf", "where", "fill", "triton_"}) ||
      has_name_token(n, "mul") || has_name_token(n, "add") || has_name_token(n, "div") || has_name_token(n, "exp") ||
      has_name_token(n, "all") || has_name_token(n, "scale") || has_name_token(n, "sub")) {
    return KernelClass::elementwise;
  }
  return KernelClass::other;
}

KernelClass classify_event(const trace::Event& event) {
  if (event.category == trace::Category::gpu_memcpy) return KernelClass::memcpy;
  if (event.category == trace::Category::gpu_memset) return KernelClass::memset;
  return classify_kernel(event.name);
}

bool gemm_uses_tensor_cores(std::string_view name) {
  const std::string n = lower(name);
  if (contains(n, "ffma")) return false;
  return contains_any(n, {"nvjet", "_h_", "16816", "1688", "hmma", "wgmma", "hgmma", "bf16", "f16", "tf32", "imma",
                          "tensorop", "gmma", "mma_sync"});
}

std::string short_kernel_name(std::string_view name, std::size_t max_chars) {
  std::string s(name);
  if (s.rfind("void ", 0) == 0) s.erase(0, 5);
  // Anywhere in the scope ("ns::(anonymous namespace)::kernel<…>"), not only in front.
  constexpr std::string_view kAnonymous = "(anonymous namespace)::";
  for (std::size_t at = s.find(kAnonymous); at != std::string::npos; at = s.find(kAnonymous, at))
    s.erase(at, kAnonymous.size());
  // Cut at the first template or argument list: what remains is the qualified function name.
  std::size_t cut = s.find_first_of("<(");
  std::string out(cut == std::string::npos ? s : s.substr(0, cut));
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.empty()) out = std::string(name);
  // A long qualified name keeps only its last scope.
  if (utf8_columns(out) > max_chars) {
    std::size_t scope = out.rfind("::");
    if (scope != std::string::npos && utf8_columns(std::string_view(out).substr(scope + 2)) <= max_chars)
      out = out.substr(scope + 2);
  }
  return max_chars > 1 ? cut_to_columns(out, max_chars) : out;
}

}  // namespace attnprof::report
