#pragma once
// What a piece of device work is, from its name alone: GPU kernel names as CUPTI reports them
// (nvjet_…, sm80_xmma_gemm_…, softmax_warp_forward<…>, pytorch_flash::flash_fwd_kernel<…>) and
// the CPU kernels' short names (gemm, mul, copy, fill, masked_fill, tril, softmax, ...).
#include <attnprof/trace.h>

#include <string>
#include <string_view>

namespace attnprof::report {

enum class KernelClass { gemm, elementwise, copy, mask, softmax, attention, memset, memcpy, other };

const char* kernel_class_name(KernelClass kind);  // "gemm", "elementwise", ...
KernelClass classify_kernel(std::string_view name);
// As classify_kernel, but gpu_memcpy / gpu_memset events are memcpy / memset whatever their name.
KernelClass classify_event(const trace::Event& event);

// A GEMM whose name carries a tensor-core signature (nvjet, _h_, s16816/h1688-style MMA shapes, hmma, wgmma, HGMMA,
// bf16, f16, tf32, imma, tensorop) and is not marked ffma (fp32 FMA on the CUDA cores).
bool gemm_uses_tensor_cores(std::string_view name);

// True when `word` is one of the name's identifier pieces (split at every non-alphanumeric
// character, '_' included), compared case-insensitively: "all" in "aten::all", not in "small".
bool has_name_token(std::string_view name, std::string_view word);

// A readable label for a kernel: "void ns::kernel<...>(args)" becomes "ns::kernel", long
// names are cut to `max_chars` code points with an ellipsis.
std::string short_kernel_name(std::string_view name, std::size_t max_chars = 48);

}  // namespace attnprof::report
