// The entry point `attnprof --plugin` looks for.
#include <attnprof/variant.h>

#include "two_pass_variant.h"

extern "C" void attnprof_register_variants() { attnprof::register_variant(make_two_pass_variant()); }
