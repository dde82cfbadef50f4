#include "ops/backend.h"

#include <attnprof/error.h>
#include <fmt/format.h>

#include <array>
#include <mutex>

#include "core/saturating.h"
#include "ops/cuda_unavailable.h"

namespace attnprof::ops {
namespace {
std::array<Backend*, 2>& installed() {
  static std::array<Backend*, 2> all{nullptr, nullptr};
  return all;
}
std::array<BackendProvider, 2>& providers() {
  static std::array<BackendProvider, 2> all{};
  return all;
}
std::mutex& install_mutex() {
  static std::mutex m;
  return m;
}

[[noreturn]] void throw_no_cudnn(const AttentionSpec& spec) {
  throw UsageError(fmt::format("device {}: cuDNN's SDPA runs on device cuda only", device_name(spec.device)));
}

}  // namespace

std::optional<std::string> Backend::cudnn_sdpa_prepare(const AttentionSpec& spec) { throw_no_cudnn(spec); }

void Backend::cudnn_sdpa_forward(const AttentionSpec& spec, Tensor& out, const Tensor& q, const Tensor& k,
                                 const Tensor& v) {
  (void)out, (void)q, (void)k, (void)v;
  throw_no_cudnn(spec);
}

void Backend::cudnn_sdpa_forward_with_stats(const AttentionSpec& spec, Tensor& out, const Tensor& q, const Tensor& k,
                                            const Tensor& v, Tensor& stats) {
  (void)out, (void)q, (void)k, (void)v, (void)stats;
  throw_no_cudnn(spec);
}

std::optional<std::string> Backend::cudnn_sdpa_backward_prepare(const AttentionSpec& spec) { throw_no_cudnn(spec); }

void Backend::cudnn_sdpa_backward(const AttentionSpec& spec, Tensor& dq, Tensor& dk, Tensor& dv, const Tensor& q,
                                  const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& stats,
                                  const Tensor& dout) {
  (void)dq, (void)dk, (void)dv, (void)q, (void)k, (void)v, (void)out, (void)stats, (void)dout;
  throw_no_cudnn(spec);
}

std::int64_t Backend::cudnn_sdpa_backward_workspace_bytes(const AttentionSpec& spec) const { throw_no_cudnn(spec); }

void Backend::softmax_backward(Tensor& dst, const Tensor& grad, const Tensor& probs, double scale) {
  (void)grad, (void)probs, (void)scale;
  throw UsageError(fmt::format("device {}: no softmax backward kernel on this device; allowed: cpu",
                               device_name(dst.device())));
}

void Backend::sum_head_groups(Tensor& dst, const Tensor& src) {
  (void)src;
  throw UsageError(fmt::format("device {}: no head-group sum kernel on this device; allowed: cpu",
                               device_name(dst.device())));
}

std::int64_t Backend::log_sum_exp_bytes(const AttentionSpec& spec) {
  return sat_product({spec.batch, spec.heads, spec.seq_q, 4});
}

std::int64_t Backend::fused_workspace_bytes(const AttentionSpec& spec, bool flash) const {
  (void)flash;
  return log_sum_exp_bytes(spec);
}

std::int64_t Backend::flash_backward_default_bytes(const AttentionSpec& spec) {
  return log_sum_exp_bytes(spec);  // Δ: one fp32 per query row, as the log-sum-exp
}

std::int64_t Backend::fused_backward_workspace_bytes(const AttentionSpec& spec, bool flash) const {
  (void)flash;
  return flash_backward_default_bytes(spec);
}

void install_backend(Device device, Backend* backend) {
  std::lock_guard lock(install_mutex());
  installed()[static_cast<std::size_t>(device)] = backend;
}

void install_backend_provider(Device device, BackendProvider provider) {
  std::lock_guard lock(install_mutex());
  providers()[static_cast<std::size_t>(device)] = provider;
}

std::optional<std::string> unavailable_reason(Device device) {
  BackendProvider provider;
  {
    std::lock_guard lock(install_mutex());
    if (installed()[static_cast<std::size_t>(device)] != nullptr) return std::nullopt;
    provider = providers()[static_cast<std::size_t>(device)];
  }
  // A CUDA build provides its backend, made lazily: usable when a GPU and driver are.
  if (provider.unavailable == nullptr) {
    return device == Device::cpu ? std::string(kNoCpuBackendInstalled) : std::string(kNoCudaInThisBuild);
  }
  return provider.unavailable();
}

bool has_backend(Device device) { return !unavailable_reason(device).has_value(); }

Backend& backend(Device device) {
  std::lock_guard lock(install_mutex());
  Backend*& b = installed()[static_cast<std::size_t>(device)];
  BackendProvider provider = providers()[static_cast<std::size_t>(device)];
  // Made on first use; throws UsageError("device cuda: ...; allowed here: cpu") when it cannot be.
  if (b == nullptr && provider.get != nullptr) b = &provider.get();
  if (b == nullptr && device == Device::cpu) throw Error(std::string("device cpu: ") + kNoCpuBackendInstalled);
  if (b == nullptr) {
    throw UsageError(std::string("device cuda: ") + kNoCudaInThisBuild + "; allowed here: cpu");
  }
  return *b;
}

}  // namespace attnprof::ops
