#pragma once
// Log-log plots as inline SVG: lines of points per series (time and memory vs S) and the
// roofline (attained TFLOP/s against FLOP per byte, under the measured ceilings).
#include <string>
#include <vector>

namespace attnprof::report {

struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), both > 0
};

struct PlotAxes {
  std::string title, x_label, y_label;
  int width = 540, height = 360;
};

// Series colours follow their order; empty when no point is positive.
std::string log_log_plot_svg(const PlotAxes& axes, const std::vector<PlotSeries>& series);

struct RooflineMark {
  std::string label;
  double intensity = 0;  // FLOP per byte
  double tflops = 0;
};
// The roof: bandwidth × intensity up to the ridge, then the matmul ceiling.
std::string roofline_svg(const PlotAxes& axes, double matmul_tflops, double copy_gbps, const std::vector<RooflineMark>& marks);

// Colour of the i-th series ("#1f77b4", ...).
const char* series_color(std::size_t index);

}  // namespace attnprof::report
