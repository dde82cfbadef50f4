#include "report/svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/utf8.h"
#include "report/html_escape.h"

namespace attnprof::report {
namespace {

constexpr int kLeft = 62, kRightPad = 12, kTop = 30, kBottom = 44, kLegendRow = 16, kLegendText = 24;
constexpr double kFontPx = 11, kTitlePx = 13;

// Where the frame ends and the legend column starts; the SVG's size holds both.
struct Layout {
  int right = 0, bottom = 0;  // the frame's right and bottom edges
  int legend_x = 0;           // the legend column's left edge
  int width = 0, height = 0;  // the SVG's
};

Layout layout(const PlotAxes& axes, const std::vector<std::string_view>& legend) {
  Layout l;
  l.right = axes.width - kRightPad;
  l.bottom = axes.height - kBottom;
  l.legend_x = axes.width;
  double text = 0;
  // Widths of the text as html_escape shows it (control characters as escapes).
  for (std::string_view label : legend) text = std::max(text, text_width_px(printable(label), kFontPx));
  l.width = legend.empty() ? axes.width : axes.width + kLegendText + static_cast<int>(std::ceil(text)) + 8;
  l.width = std::max(l.width, kLeft + static_cast<int>(std::ceil(text_width_px(printable(axes.title), kTitlePx))) + 8);
  l.height = std::max(axes.height, kTop + 8 + static_cast<int>(legend.size()) * kLegendRow + 8);
  return l;
}

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

std::string frame(const PlotAxes& axes, const Layout& l, const LogScale& x, const LogScale& y, double x_base,
                  double y_base) {
  std::string svg = fmt::format(
      "<svg class=\"plot\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"{2}\">\n"
      "<text x=\"{3}\" y=\"16\" font-size=\"{4}\" font-weight=\"bold\">{5}</text>\n",
      l.width, l.height, kFontPx, kLeft, kTitlePx, html_escape(axes.title));
  const int bottom = l.bottom, right = l.right;
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

double text_width_px(std::string_view text, double font_px) {
  double em = 0;
  for (unsigned char c : text) {
    if ((c & 0xc0) == 0x80) continue;  // a UTF-8 continuation byte: its character is counted
    if (c >= 0x80) {
      em += 1.0;
    } else if ((c >= 'A' && c <= 'Z') || std::string_view("mwMW=%+~<>@#&").find(static_cast<char>(c)) !=
                                              std::string_view::npos) {
      em += 0.85;
    } else {
      em += 0.65;
    }
  }
  return em * font_px;
}

namespace {

// A roofline mark of `shape` (RooflineMark::shape) centred on (cx, cy); `inner` goes inside it
// (a <title>), `attributes` into its tag.
std::string mark_svg(int shape, double cx, double cy, const std::string& attributes, const std::string& color,
                     const std::string& inner) {
  switch (shape % 3) {
    case 1:
      return fmt::format("<rect {} x=\"{:.1f}\" y=\"{:.1f}\" width=\"8\" height=\"8\" fill=\"{}\">{}</rect>", attributes,
                         cx - 4, cy - 4, color, inner);
    case 2:
      return fmt::format("<polygon {} points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\" fill=\"{}\">{}"
                         "</polygon>",
                         attributes, cx, cy - 5, cx + 5, cy, cx, cy + 5, cx - 5, cy, color, inner);
    default:
      return fmt::format("<circle {} cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\">{}</circle>", attributes, cx, cy,
                         color, inner);
  }
}

// The points of a series that a log-log plot can show, sorted by x.
std::vector<std::pair<double, double>> positive_points(const PlotSeries& series) {
  std::vector<std::pair<double, double>> pts;
  for (auto [px, py] : series.points) {
    if (px > 0 && py > 0 && std::isfinite(px) && std::isfinite(py)) pts.emplace_back(px, py);
  }
  std::sort(pts.begin(), pts.end());
  return pts;
}

}  // namespace

std::string log_log_plot_svg(const PlotAxes& axes, const std::vector<PlotSeries>& series) {
  double x_min = INFINITY, x_max = 0, y_min = INFINITY, y_max = 0;
  std::vector<std::string_view> legend;
  for (const auto& s : series) {
    const auto pts = positive_points(s);
    if (!pts.empty()) legend.push_back(s.name);
    for (auto [x, y] : pts) {
      x_min = std::min(x_min, x);
      x_max = std::max(x_max, x);
      y_min = std::min(y_min, y);
      y_max = std::max(y_max, y);
    }
  }
  if (x_max <= 0) return {};
  const Layout l = layout(axes, legend);
  const LogScale x = make_scale(x_min, x_max, 2, kLeft, l.right);
  const LogScale y = make_scale(y_min, y_max, 10, l.bottom, kTop);
  std::string svg = frame(axes, l, x, y, 2, 10);
  int row = 0;
  for (const auto& s : series) {
    const auto pts = positive_points(s);
    if (pts.empty()) continue;
    const std::string variant = html_escape(s.variant);
    const std::string dash = s.dash.empty() ? "" : fmt::format(" stroke-dasharray=\"{}\"", html_escape(s.dash));
    std::string path;
    for (auto [px, py] : pts) path += fmt::format("{:.1f},{:.1f} ", x.map(px), y.map(py));
    svg += fmt::format("<polyline class=\"series\" data-variant=\"{}\" points=\"{}\" fill=\"none\" stroke=\"{}\" "
                       "stroke-width=\"2\"{}/>\n",
                       variant, path, s.color, dash);
    for (auto [px, py] : pts) {
      svg += fmt::format("<circle data-variant=\"{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>{}: {:g}, "
                         "{:.4g}</title></circle>\n",
                         variant, x.map(px), y.map(py), s.color, html_escape(s.name), px, py);
    }
    const int ly = kTop + 8 + row++ * kLegendRow;
    svg += fmt::format("<line class=\"legend\" data-variant=\"{0}\" x1=\"{1}\" y1=\"{2}\" x2=\"{3}\" y2=\"{2}\" "
                       "stroke=\"{4}\" stroke-width=\"2\"{5}/><text class=\"legend\" x=\"{6}\" y=\"{7}\">{8}</text>\n",
                       variant, l.legend_x, ly, l.legend_x + 18, s.color, dash, l.legend_x + kLegendText, ly + 4,
                       html_escape(s.name));
  }
  svg += "</svg>\n";
  return svg;
}

std::string roofline_svg(const PlotAxes& axes, double matmul_tflops, double copy_gbps, const std::vector<RooflineMark>& marks) {
  double x_min = INFINITY, x_max = 0, y_min = INFINITY, y_max = 0;
  std::vector<std::string_view> legend;
  for (const auto& m : marks) {
    if (!(m.intensity > 0 && m.tflops > 0)) continue;
    legend.push_back(m.label);
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
  const Layout l = layout(axes, legend);
  const LogScale x = make_scale(x_min, x_max, 10, kLeft, l.right);
  const LogScale y = make_scale(y_min, y_max, 10, l.bottom, kTop);
  std::string svg = frame(axes, l, x, y, 10, 10);
  if (roof) {
    const double x0 = std::pow(10, x.lo), x1 = std::pow(10, x.hi);
    const double y0 = copy_gbps * 1e9 * x0 / 1e12;
    svg += fmt::format("<polyline class=\"roof\" points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\" fill=\"none\" "
                       "stroke=\"#333\" stroke-width=\"2\"/>\n",
                       x.map(x0), y.map(std::max(y0, std::pow(10, y.lo))), x.map(ridge), y.map(matmul_tflops), x.map(x1),
                       y.map(matmul_tflops));
    // Above the flat roof, ending at the frame's right edge, so it never runs out of the frame.
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#333\">matmul {:.4g} TFLOP/s</text>\n",
                       l.right - 4, y.map(matmul_tflops) - 5, matmul_tflops);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"#333\">copy {:.4g} GB/s</text>\n", x.map(x0) + 4,
                       y.map(std::max(y0, std::pow(10, y.lo))) - 6, copy_gbps);
  }
  int row = 0;
  for (const auto& m : marks) {
    if (!(m.intensity > 0 && m.tflops > 0)) continue;
    const std::string variant = html_escape(m.variant);
    svg += mark_svg(m.shape, x.map(m.intensity), y.map(m.tflops), fmt::format("class=\"mark\" data-variant=\"{}\"", variant),
                    m.color,
                    fmt::format("<title>{}: {:.3g} FLOP/byte, {:.3g} TFLOP/s</title>", html_escape(m.label), m.intensity,
                                m.tflops)) +
           "\n";
    const int ly = kTop + 8 + row++ * kLegendRow;
    svg += mark_svg(m.shape, l.legend_x + 9, ly, fmt::format("class=\"legend\" data-variant=\"{}\"", variant), m.color, "");
    svg += fmt::format("<text class=\"legend\" x=\"{}\" y=\"{}\">{}</text>\n", l.legend_x + kLegendText, ly + 4,
                       html_escape(m.label));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace attnprof::report
