#pragma once
// Tensor: a strided view of device memory. Shapes and strides are in elements.
#include <attnprof/dtype.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attnprof {

enum class Device { cpu, cuda };
std::string_view device_name(Device device);  // "cpu", "cuda"
Device parse_device(std::string_view name);     // throws UsageError naming cpu|cuda

// Owns one allocation; frees it through the device allocator (which keeps the byte statistics).
class Storage {
 public:
  Storage(Device device, std::size_t bytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  Device device_;
  std::size_t bytes_;
  void* data_;
};

class Tensor {
 public:
  Tensor() = default;
  static Tensor empty(std::vector<std::int64_t> shape, DType dtype, Device device = Device::cpu);
  // A new tensor with the given strides over a fresh allocation big enough for them.
  static Tensor empty_strided(std::vector<std::int64_t> shape, std::vector<std::int64_t> strides, DType dtype,
                              Device device = Device::cpu);
  // A view sharing this tensor's storage.
  Tensor view_strided(std::vector<std::int64_t> shape, std::vector<std::int64_t> strides,
                      std::int64_t offset_elements = 0) const;

  bool defined() const { return storage_ != nullptr; }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  const std::vector<std::int64_t>& strides() const { return strides_; }
  std::int64_t size(int dim) const { return shape_.at(dim < 0 ? dim + rank() : dim); }
  std::int64_t stride(int dim) const { return strides_.at(dim < 0 ? dim + rank() : dim); }
  int rank() const { return static_cast<int>(shape_.size()); }
  std::int64_t numel() const;
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? storage_->device() : Device::cpu; }
  bool is_contiguous() const;
  std::size_t storage_bytes() const { return storage_ ? storage_->bytes() : 0; }

  void* raw() const;  // first element of this view
  template <class T>
  T* data() const {
    return static_cast<T*>(raw());
  }

  std::string describe() const;  // "bf16[8, 16, 1024, 64]"

 private:
  std::shared_ptr<Storage> storage_;
  std::vector<std::int64_t> shape_;
  std::vector<std::int64_t> strides_;
  std::int64_t offset_ = 0;
  DType dtype_ = DType::fp32;
};

std::vector<std::int64_t> contiguous_strides(const std::vector<std::int64_t>& shape);

// Standard-normal values from a seeded generator, rounded to the tensor's dtype. CPU tensors only.
void fill_normal(Tensor& dst, std::uint64_t seed);

}  // namespace attnprof
