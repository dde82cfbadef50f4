#include <attnprof/error.h>
#include <attnprof/memory.h>
#include <attnprof/tensor.h>

#include <fmt/format.h>

#include <random>
#include <string>

namespace attnprof {

std::string_view device_name(Device device) { return device == Device::cpu ? "cpu" : "cuda"; }

Device parse_device(std::string_view name) {
  if (name == "cpu") return Device::cpu;
  if (name == "cuda" || name == "gpu") return Device::cuda;
  throw UsageError("device: unknown device '" + std::string(name) + "'; allowed: cpu, cuda");
}

Storage::Storage(Device device, std::size_t bytes)
    : device_(device), bytes_(bytes), data_(memory::allocate(device, bytes)) {}

Storage::~Storage() { memory::release(device_, data_, bytes_); }

std::vector<std::int64_t> contiguous_strides(const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> strides(shape.size());
  std::int64_t running = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = running;
    running *= shape[i];
  }
  return strides;
}

Tensor Tensor::empty(std::vector<std::int64_t> shape, DType dtype, Device device) {
  std::vector<std::int64_t> strides = contiguous_strides(shape);
  return empty_strided(std::move(shape), std::move(strides), dtype, device);
}

Tensor Tensor::empty_strided(std::vector<std::int64_t> shape, std::vector<std::int64_t> strides, DType dtype,
                             Device device) {
  if (shape.size() != strides.size()) throw Error("empty_strided: shape and strides differ in rank");
  std::int64_t span = 1;  // elements from the first to one past the last
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0 || strides[i] < 0) throw Error("empty_strided: negative size or stride");
    if (shape[i] == 0) {
      span = 0;
      break;
    }
    span += (shape[i] - 1) * strides[i];
  }
  Tensor t;
  t.storage_ = std::make_shared<Storage>(device, static_cast<std::size_t>(span) * dtype_size(dtype));
  t.shape_ = std::move(shape);
  t.strides_ = std::move(strides);
  t.dtype_ = dtype;
  return t;
}

Tensor Tensor::view_strided(std::vector<std::int64_t> shape, std::vector<std::int64_t> strides,
                            std::int64_t offset_elements) const {
  if (shape.size() != strides.size()) throw Error("view_strided: shape and strides differ in rank");
  Tensor t = *this;
  t.shape_ = std::move(shape);
  t.strides_ = std::move(strides);
  t.offset_ = offset_ + offset_elements;
  return t;
}

std::int64_t Tensor::numel() const {
  std::int64_t n = 1;
  for (std::int64_t s : shape_) n *= s;
  return n;
}

bool Tensor::is_contiguous() const { return strides_ == contiguous_strides(shape_); }

void* Tensor::raw() const {
  if (!storage_) return nullptr;
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<std::int64_t>(dtype_size(dtype_));
}

std::string Tensor::describe() const {
  std::string dims;
  for (std::size_t i = 0; i < shape_.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape_[i]);
  return fmt::format("{}[{}]", dtype_name(dtype_), dims);
}

namespace {
template <class Store>
void fill_strided(const Tensor& dst, std::mt19937_64& engine, Store store) {
  std::normal_distribution<double> normal(0.0, 1.0);
  const auto& shape = dst.shape();
  const auto& strides = dst.strides();
  std::vector<std::int64_t> index(shape.size(), 0);
  std::int64_t count = dst.numel();
  for (std::int64_t n = 0; n < count; ++n) {
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < shape.size(); ++d) offset += index[d] * strides[d];
    store(offset, normal(engine));
    for (std::size_t d = shape.size(); d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}
}  // namespace

void fill_normal(Tensor& dst, std::uint64_t seed) {
  if (dst.device() != Device::cpu) throw Error("fill_normal: CPU tensors only");
  std::mt19937_64 engine(seed);
  switch (dst.dtype()) {
    case DType::fp32:
      fill_strided(dst, engine, [p = dst.data<float>()](std::int64_t i, double x) { p[i] = static_cast<float>(x); });
      break;
    case DType::fp64:
      fill_strided(dst, engine, [p = dst.data<double>()](std::int64_t i, double x) { p[i] = x; });
      break;
    case DType::bf16:
      fill_strided(dst, engine,
                   [p = dst.data<bf16>()](std::int64_t i, double x) { p[i] = float_to_bf16(static_cast<float>(x)); });
      break;
    case DType::fp16:
      fill_strided(dst, engine,
                   [p = dst.data<fp16>()](std::int64_t i, double x) { p[i] = float_to_fp16(static_cast<float>(x)); });
      break;
    default: throw Error("fill_normal: floating-point dtypes only");
  }
}

}  // namespace attnprof
