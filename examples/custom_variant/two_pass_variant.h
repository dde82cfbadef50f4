#pragma once
// An out-of-tree attention variant: two passes over the keys per query row (max and sum first,
// then the weighted sum of values), fp32 accumulation, on the CPU. Built only on attnprof's
// public headers.
#include <attnprof/variant.h>

#include <memory>

std::unique_ptr<attnprof::Variant> make_two_pass_variant();
