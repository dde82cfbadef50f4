#pragma once
// The CUDA backend: ops::Backend on one device and one stream. Created on first use (ops::backend
// asks for it), so a CUDA build on a machine without a GPU or driver runs CPU work as before and
// only --device cuda gets a clear UsageError.
#include <cuda_runtime_api.h>

#include <memory>
#include <optional>
#include <string>

#include "ops/backend.h"

namespace attnprof::cuda {

// nullopt when a CUDA device can be used; otherwise why not (the CUDA error string), one line.
std::optional<std::string> device_unavailable_reason();
// The process-wide backend; throws UsageError naming device cuda and the reason when no GPU.
ops::Backend& cuda_backend();
// The stream every backend call runs on (valid after cuda_backend()).
cudaStream_t backend_stream();

}  // namespace attnprof::cuda
