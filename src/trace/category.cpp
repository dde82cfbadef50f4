#include <attnprof/trace.h>

#include <string_view>

namespace attnprof::trace {

const char* category_name(Category category) {
  switch (category) {
    case Category::cpu_op: return "cpu_op";
    case Category::user_annotation: return "user_annotation";
    case Category::cpu_kernel: return "cpu_kernel";
    case Category::kernel: return "kernel";
    case Category::gpu_memcpy: return "gpu_memcpy";
    case Category::gpu_memset: return "gpu_memset";
    case Category::cuda_runtime: return "cuda_runtime";
    case Category::cuda_driver: return "cuda_driver";
    case Category::gpu_user_annotation: return "gpu_user_annotation";
    case Category::python_function: return "python_function";
    case Category::cpu_instant_event: return "cpu_instant_event";
    case Category::trace_span: return "Trace";
    case Category::other: return "";
  }
  return "";
}

Category parse_category(const std::string& name) {
  static constexpr Category kAll[] = {
      Category::cpu_op,       Category::user_annotation,     Category::cpu_kernel,      Category::kernel,
      Category::gpu_memcpy,   Category::gpu_memset,          Category::cuda_runtime,    Category::cuda_driver,
      Category::gpu_user_annotation, Category::python_function, Category::cpu_instant_event, Category::trace_span};
  for (Category c : kAll)
    if (name == category_name(c)) return c;
  return Category::other;
}

}  // namespace attnprof::trace
