#include "variants/builtin.h"

#include "variants/builtin_list.h"
#include "variants/cudnn.h"

namespace attnprof {

void register_builtin_variants() {
  register_variant(variants::make_naive_variant());
  register_variant(variants::make_inplace_variant());
  register_variant(variants::make_math_variant());
  register_variant(variants::make_fused_variant());
  register_variant(variants::make_efficient_variant());
  register_variant(variants::make_flash_variant());
  register_variant(variants::make_cudnn_variant());
}

}  // namespace attnprof
