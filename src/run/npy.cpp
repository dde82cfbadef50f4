#include "run/npy.h"

#include <attnprof/error.h>
#include <fmt/format.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/atomic_file.h"

namespace attnprof {
namespace {

std::string npy_descr(DType dtype) {
  switch (dtype) {
    case DType::fp32:
    case DType::bf16: return "<f4";
    case DType::fp64: return "<f8";
    case DType::fp16: return "<f2";
    case DType::int32: return "<i4";
    case DType::boolean: return "|b1";
  }
  return "";
}

std::size_t npy_element_size(DType dtype) { return dtype == DType::bf16 ? 4 : dtype_size(dtype); }

}  // namespace

void write_npy(const std::string& path, const Tensor& tensor) {
  if (tensor.device() != Device::cpu) throw Error("write_npy: CPU tensors only");
  std::string shape;
  for (std::int64_t d : tensor.shape()) shape += std::to_string(d) + ", ";
  if (tensor.rank() > 1) shape.erase(shape.size() - 2);  // "(4,)" keeps its comma for rank 1
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", npy_descr(tensor.dtype()),
                                   tensor.rank() == 1 ? shape.substr(0, shape.size() - 1) : shape);
  // magic(6) + version(2) + header length(2) + header + '\n', padded with spaces to 64 bytes.
  std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';

  std::string bytes("\x93NUMPY\x01\x00", 8);
  std::uint16_t header_len = static_cast<std::uint16_t>(header.size());
  bytes.push_back(static_cast<char>(header_len & 0xff));
  bytes.push_back(static_cast<char>(header_len >> 8));
  bytes += header;

  std::size_t element = npy_element_size(tensor.dtype());
  std::size_t source_element = dtype_size(tensor.dtype());
  std::vector<char> body(static_cast<std::size_t>(tensor.numel()) * element);
  const auto& dims = tensor.shape();
  const auto& strides = tensor.strides();
  std::vector<std::int64_t> index(dims.size(), 0);
  const char* base = static_cast<const char*>(tensor.raw());
  for (std::int64_t n = 0; n < tensor.numel(); ++n) {
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < dims.size(); ++d) offset += index[d] * strides[d];
    const char* src = base + offset * static_cast<std::int64_t>(source_element);
    char* dst = body.data() + n * static_cast<std::int64_t>(element);
    if (tensor.dtype() == DType::bf16) {
      bf16 h;
      std::memcpy(&h, src, sizeof h);
      float f = bf16_to_float(h);
      std::memcpy(dst, &f, sizeof f);
    } else {
      std::memcpy(dst, src, element);
    }
    for (std::size_t d = dims.size(); d-- > 0;) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
  AtomicFile file(path, "dump_dir");
  file.write(bytes);
  file.write(std::string_view(body.data(), body.size()));
  file.commit();
}

}  // namespace attnprof
