#pragma once
// Headless Chromium for the report's tests: found at ATTNPROF_CHROMIUM or the usual paths, run
// with a fresh profile and nothing that reaches the network, its output captured.
#include <string>

namespace attnprof::testing {

// Empty when there is none.
std::string find_chromium();

// The DOM Chromium builds from `page` (a file) once its scripts have run (--dump-dom).
std::string chromium_dom(const std::string& chromium, const std::string& page);

// Renders `page` at 1280 x `height` into the PNG file `png`.
void chromium_screenshot(const std::string& chromium, const std::string& page, const std::string& png, int height);

}  // namespace attnprof::testing
