#include "cuda/check.h"

#include <attnprof/error.h>

#include <fmt/format.h>

namespace attnprof::cuda {

std::string format_vendor_error(const char* call, const char* file, int line, const std::string& reason) {
  return fmt::format("{} failed at {}:{}: {}", call, file, line, reason);
}

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  cudaGetLastError();  // clear a sticky-free error so the next call starts clean
  throw Error(format_vendor_error(call, file, line,
                                  fmt::format("{} ({})", cudaGetErrorString(status), cudaGetErrorName(status))));
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw Error(format_vendor_error(call, file, line,
                                  fmt::format("{} ({})", cublasLtGetStatusString(status), cublasLtGetStatusName(status))));
}

void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line) {
  char last[1024] = {0};
  cudnnGetLastErrorString(last, sizeof last);
  std::string reason = cudnnGetErrorString(status);
  if (last[0] != '\0') reason += fmt::format(": {}", last);
  for (char& c : reason)
    if (c == '\n') c = ' ';
  throw Error(format_vendor_error(call, file, line, reason));
}

void throw_cupti_error(CUptiResult status, const char* call, const char* file, int line) {
  const char* text = nullptr;
  if (cuptiGetResultString(status, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown CUPTI error";
  throw Error(format_vendor_error(call, file, line, fmt::format("{} (CUptiResult {})", text, static_cast<int>(status))));
}

void throw_driver_error(int status, const char* call, const char* file, int line) {
  throw Error(format_vendor_error(call, file, line, fmt::format("CUresult {}", status)));
}

}  // namespace attnprof::cuda
