#include "report/svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "report/html_escape.h"

namespace attnprof::report {
namespace {

constexpr int kLeft = 62, kRight = 130, kTop = 30, kBottom = 44;

struct LogScale {
  double lo, hi;  // decades (log10) of the range shown
  int from, to;   // pixels
  double map(double value) const { return from + (std::log10(value) - lo) / (hi - lo) * (to - from); }
};

// A range padded to whole powers of `base` around [min, max].
LogScale make_scale(double min, double max, double base, int from, int to) {
  const double lb = std::log10(base);
  double lo = std::floor(std::log10(min) / lb) * lb;
  double hi = std::ceil(std::log10(max) / lb) * lb;
  if (hi - lo < lb) hi = lo + lb;
  return {lo, hi, from, to};
}

std::string tick_label(double value) {
  if (value >= 1e6 || value < 1e-3) return fmt::format("{:.0e}", value);
  if (value >= 1) return fmt::format("{:.0f}", value);
  return fmt::format("{:g}", value);
}

std::string frame(const PlotAxes& axes, const LogScale& x, const LogScale& y, double x_base, double y_base) {
  std::string svg = fmt::format(
      "<svg class=\"plot\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n"
      "<text x=\"{2}\" y=\"16\" font-size=\"13\" font-weight=\"bold\">{3}</text>\n",
      axes.width, axes.height, kLeft, html_escape(axes.title));
  const int bottom = axes.height - kBottom, right = axes.width - kRight;
  for (double d = x.lo; d <= x.hi + 1e-9; d += std::log10(x_base)) {
    const double px = x.map(std::pow(10, d));
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e4e4e4\"/>"
                       "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\" fill=\"#444\">{4}</text>\n",
                       px, kTop, bottom, bottom + 14, tick_label(std::pow(10, d)));
  }
  for (double d = y.lo; d <= y.hi + 1e-9; d += std::log10(y_base)) {
    const double py = y.map(std::pow(10, d));
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#e4e4e4\"/>"
                       "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\" fill=\"#444\">{5}</text>\n",
                       kLeft, py, right, kLeft - 4, py + 4, tick_label(std::pow(10, d)));
  }
  svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888\"/>\n", kLeft, kTop,
                     right - kLeft, bottom - kTop);
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#222\">{}</text>\n", (kLeft + right) / 2,
                     axes.height - 8, html_escape(axes.x_label));
  svg += fmt::format("<text transform=\"translate(14 {}) rotate(-90)\" text-anchor=\"middle\" fill=\"#222\">{}</text>\n",
                     (kTop + bottom) / 2, html_escape(axes.y_label));
  return svg;
}

}  // namespace

const char* series_color(std::size_t index) {
  static const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
                                  "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
  return kColors[index % (sizeof kColors / sizeof kColors[0])];
}

std::string log_log_plot_svg(const PlotAxes& axes, const std::vector<PlotSeries>& series) {
  double x_min = INFINITY, x_max = 0, y_min = INFINITY, y_max = 0;
  for (const auto& s : series) {
    for (auto [x, y] : s.points) {
      if (!(x > 0 && y > 0) || !std::isfinite(x) || !std::isfinite(y)) continue;
      x_min = std::min(x_min, x);
      x_max = std::max(x_max, x);
      y_min = std::min(y_min, y);
      y_max = std::max(y_max, y);
    }
  }
  if (x_max <= 0) return {};
  const LogScale x = make_scale(x_min, x_max, 2, kLeft, axes.width - kRight);
  const LogScale y = make_scale(y_min, y_max, 10, axes.height - kBottom, kTop);
  std::string svg = frame(axes, x, y, 2, 10);
  for (std::size_t i = 0; i < series.size(); ++i) {
    std::vector<std::pair<double, double>> pts;
    for (auto [px, py] : series[i].points) {
      if (px > 0 && py > 0 && std::isfinite(px) && std::isfinite(py)) pts.emplace_back(px, py);
    }
    if (pts.empty()) continue;
    std::sort(pts.begin(), pts.end());
    std::string path;
    for (auto [px, py] : pts) path += fmt::format("{:.1f},{:.1f} ", x.map(px), y.map(py));
    svg += fmt::format("<polyline class=\"series\" points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", path,
                       series_color(i));
    for (auto [px, py] : pts) {
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>{}: {:g}, {:.4g}</title></circle>\n",
                         x.map(px), y.map(py), series_color(i), html_escape(series[i].name), px, py);
    }
    const int ly = kTop + 8 + static_cast<int>(i) * 16;
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"2\"/>"
                       "<text x=\"{4}\" y=\"{5}\">{6}</text>\n",
                       axes.width - kRight + 10, ly, axes.width - kRight + 28, series_color(i), axes.width - kRight + 32,
                       ly + 4, html_escape(series[i].name));
  }
  svg += "</svg>\n";
  return svg;
}

std::string roofline_svg(const PlotAxes& axes, double matmul_tflops, double copy_gbps, const std::vector<RooflineMark>& marks) {
  double x_min = INFINITY, x_max = 0, y_min = INFINITY, y_max = 0;
  for (const auto& m : marks) {
    if (!(m.intensity > 0 && m.tflops > 0)) continue;
    x_min = std::min(x_min, m.intensity);
    x_max = std::max(x_max, m.intensity);
    y_min = std::min(y_min, m.tflops);
    y_max = std::max(y_max, m.tflops);
  }
  const bool roof = matmul_tflops > 0 && copy_gbps > 0;
  const double ridge = roof ? matmul_tflops * 1e3 / copy_gbps : 0;
  if (roof) {
    x_min = std::min(x_min, ridge / 8);
    x_max = std::max(x_max, ridge * 8);
    y_max = std::max(y_max, matmul_tflops);
    y_min = std::min(y_min, copy_gbps * 1e9 * x_min / 1e12);
  }
  if (!(x_max > 0) || !(y_max > 0) || !std::isfinite(x_min) || !std::isfinite(y_min)) return {};
  const LogScale x = make_scale(x_min, x_max, 10, kLeft, axes.width - kRight);
  const LogScale y = make_scale(y_min, y_max, 10, axes.height - kBottom, kTop);
  std::string svg = frame(axes, x, y, 10, 10);
  if (roof) {
    const double x0 = std::pow(10, x.lo), x1 = std::pow(10, x.hi);
    const double y0 = copy_gbps * 1e9 * x0 / 1e12;
    svg += fmt::format("<polyline class=\"roof\" points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\" fill=\"none\" "
                       "stroke=\"#333\" stroke-width=\"2\"/>\n",
                       x.map(x0), y.map(std::max(y0, std::pow(10, y.lo))), x.map(ridge), y.map(matmul_tflops), x.map(x1),
                       y.map(matmul_tflops));
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#333\">matmul {:.4g} TFLOP/s</text>\n", x.map(ridge) + 4,
                       y.map(matmul_tflops) - 5, matmul_tflops);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#333\">copy {:.4g} GB/s</text>\n", x.map(x0) + 4,
                       y.map(std::max(y0, std::pow(10, y.lo))) - 6, copy_gbps);
  }
  for (std::size_t i = 0; i < marks.size(); ++i) {
    const auto& m = marks[i];
    if (!(m.intensity > 0 && m.tflops > 0)) continue;
    svg += fmt::format("<circle class=\"mark\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\"><title>{}: {:.3g} FLOP/byte, "
                       "{:.3g} TFLOP/s</title></circle>\n",
                       x.map(m.intensity), y.map(m.tflops), series_color(i), html_escape(m.label), m.intensity, m.tflops);
    const int ly = kTop + 8 + static_cast<int>(i) * 16;
    svg += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>\n",
                       axes.width - kRight + 16, ly, series_color(i), axes.width - kRight + 24, ly + 4,
                       html_escape(m.label));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace attnprof::report
