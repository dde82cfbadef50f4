#pragma once
// The colour of a variant, the same on every plot of the HTML report (glance table, timelines'
// headings, the plots against S and the roofline): a fixed palette for the built-in variants and,
// for any other name (a plug-in variant), a colour picked from a second palette by a hash of the
// name, so the same name gets the same colour in every report.
#include <string_view>

namespace attnprof::report {

// "#rrggbb". naive #d62728, inplace #ff7f0e, math #8c564b, fused #9467bd, efficient #2ca02c,
// flash #1f77b4, cudnn #17becf; any other name: kPluginColors[FNV-1a 64(name) % 10], a palette
// that shares no colour with the built-in one.
const char* variant_color(std::string_view variant);

}  // namespace attnprof::report
