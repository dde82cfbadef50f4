#pragma once
// Log-log plots as inline SVG: lines of points per series (time and memory vs S) and the
// roofline (attained TFLOP/s against FLOP per byte, under the measured ceilings).
#include <string>
#include <string_view>
#include <vector>

namespace attnprof::report {

struct PlotSeries {
  std::string name;                               // the legend's text
  std::vector<std::pair<double, double>> points;  // (x, y), both > 0
  std::string variant;                            // data-variant of its marks
  std::string color;                              // "#rrggbb"
  std::string dash;                               // stroke-dasharray; empty: solid
};

// The frame's size; the legend is a column to its right, as wide as its longest text, and the
// SVG grows by that column (and in height when the legend is taller than the frame).
struct PlotAxes {
  std::string title, x_label, y_label;
  int width = 440, height = 360;
};

// Empty when no point is positive.
std::string log_log_plot_svg(const PlotAxes& axes, const std::vector<PlotSeries>& series);

struct RooflineMark {
  std::string label;
  double intensity = 0;  // FLOP per byte
  double tflops = 0;
  std::string variant;   // data-variant of its marks
  std::string color;     // "#rrggbb"
  int shape = 0;         // 0 circle, 1 square, 2 diamond (one per head dim, when several)
};
// The roof: bandwidth × intensity up to the ridge, then the matmul ceiling.
std::string roofline_svg(const PlotAxes& axes, double matmul_tflops, double copy_gbps, const std::vector<RooflineMark>& marks);

// An upper estimate of the width in pixels of `text` (UTF-8) set in a sans-serif font of
// `font_px`: 0.65 em per narrow character, 0.85 em per capital or wide ASCII sign, 1 em per
// character beyond ASCII.
double text_width_px(std::string_view text, double font_px);

}  // namespace attnprof::report
