#include "cpu/kernel_names.h"

#include <mutex>
#include <set>

namespace attnprof::cpu {

const char* intern_name(const std::string& name) {
  static std::mutex mutex;
  static std::set<std::string> names;  // node-based: element addresses never move
  std::lock_guard lock(mutex);
  return names.insert(name).first->c_str();
}

}  // namespace attnprof::cpu
