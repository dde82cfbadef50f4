#pragma once
#include <attnprof/variant.h>

#include <memory>

namespace attnprof::variants {
// cuDNN's fused SDPA. Without CUDA in the build it exists by name and refuses every spec, saying
// it needs --device cuda with a CUDA build and cuDNN; the CUDA build supplies the real body.
std::unique_ptr<Variant> make_cudnn_variant();
}  // namespace attnprof::variants
