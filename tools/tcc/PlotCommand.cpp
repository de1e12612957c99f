// `tcc plot LOG.csv -o curves.html|png`: the curves of a training run's
// --log CSV (runtime/run/csvlog.h) as one self-contained HTML page of inline
// SVG charts in the style of the compile report, or the same charts drawn
// into one PNG (PlotPng.h): the training loss with the eval loss when the
// log has one, the learning rate, the throughput, and the gradient norm,
// eval accuracy and loss scale when present. Each chart has ticked,
// labelled axes and a legend; in the SVG each series is a
// <polyline class="series" data-name=COLUMN>.
#include "Commands.h"
#include "PlotPng.h"

#include "run/cli.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace tcc::driver {

namespace {

const char *usage = R"(usage: tcc plot LOG.csv -o CURVES.html|CURVES.png

Draws the curves of a training run's --log CSV (tcc run / tcc train): loss
and eval loss, learning rate, throughput, gradient norm, eval accuracy, loss
scale (those the log has). A .html file is one self-contained page of inline
SVG charts; a .png file the same charts stacked in one image.

  --output FILE, -o FILE  the .html or .png file to write
)";

int fail(const std::string &message) {
  std::cerr << "tcc: plot: " << message << "\n";
  return 1;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string label(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string exact(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

/// About `n` round tick values covering [lo, hi].
std::vector<double> ticks(double lo, double hi, int n) {
  double span = hi - lo, raw = span / n,
         mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) {
      step = m * mag;
      break;
    }
  std::vector<double> t;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
    t.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  return t;
}

struct Series {
  std::string name, color;
  std::vector<std::pair<double, double>> points; // (step, value)
};

/// One chart: `title`, y axis `unit`, the series over the steps, and the
/// ranges its axes show (the data's, the y range padded by 5%).
struct Chart {
  std::string title, unit;
  std::vector<Series> series;
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;

  Chart(std::string title, std::string unit, std::vector<Series> series)
      : title(std::move(title)), unit(std::move(unit)),
        series(std::move(series)) {
    for (const Series &s : this->series)
      for (auto [x, y] : s.points) {
        x0 = std::min(x0, x), x1 = std::max(x1, x);
        y0 = std::min(y0, y), y1 = std::max(y1, y);
      }
    if (empty())
      return;
    if (x1 == x0)
      x1 = x0 + 1;
    if (y1 == y0) {
      y0 -= std::fabs(y0) * 0.5 + 0.5;
      y1 += std::fabs(y1) * 0.5 + 0.5;
    }
    double pad = (y1 - y0) * 0.05;
    y0 -= pad, y1 += pad;
  }
  bool empty() const { return !std::isfinite(x0) || !std::isfinite(y0); }
  // The geometry of a chart, in pixels, in both outputs.
  static constexpr double width = 720, height = 300, left = 70, right = 20,
                          top = 30, bottom = 45, w = width - left - right,
                          h = height - top - bottom;
  double X(double x) const { return left + (x - x0) / (x1 - x0) * w; }
  double Y(double y) const { return top + h - (y - y0) / (y1 - y0) * h; }
};

void svgChart(std::ostream &os, const Chart &c) {
  const double left = Chart::left, top = Chart::top, w = Chart::w, h = Chart::h,
               height = Chart::height;
  auto X = [&](double x) { return c.X(x); };
  auto Y = [&](double y) { return c.Y(y); };
  os << "<h2>" << c.title << "</h2>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
     << "width=\"" << num(Chart::width) << "\" height=\"" << num(height)
     << "\" class=\"chart\" data-x0=\"" << exact(c.x0) << "\" data-x1=\""
     << exact(c.x1) << "\" data-y0=\"" << exact(c.y0) << "\" data-y1=\""
     << exact(c.y1) << "\">\n<rect x=\"" << num(left) << "\" y=\"" << num(top)
     << "\" width=\"" << num(w) << "\" height=\"" << num(h)
     << "\" fill=\"#fafafa\" stroke=\"#999\"/>\n";
  for (double t : ticks(c.y0, c.y1, 5))
    os << "<line x1=\"" << num(left) << "\" x2=\"" << num(left + w)
       << "\" y1=\"" << num(Y(t)) << "\" y2=\"" << num(Y(t))
       << "\" stroke=\"#e4e4e4\"/><text x=\"" << num(left - 6) << "\" y=\""
       << num(Y(t) + 4) << "\" font-size=\"11\" text-anchor=\"end\">"
       << label(t) << "</text>\n";
  for (double t : ticks(c.x0, c.x1, 8))
    os << "<line x1=\"" << num(X(t)) << "\" x2=\"" << num(X(t)) << "\" y1=\""
       << num(top + h) << "\" y2=\"" << num(top + h + 4)
       << "\" stroke=\"#999\"/><text x=\"" << num(X(t)) << "\" y=\""
       << num(top + h + 16) << "\" font-size=\"11\" text-anchor=\"middle\">"
       << label(t) << "</text>\n";
  os << "<text x=\"" << num(left + w / 2) << "\" y=\"" << num(height - 6)
     << "\" font-size=\"12\" text-anchor=\"middle\">step</text>\n"
     << "<text x=\"14\" y=\"" << num(top + h / 2)
     << "\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 14 "
     << num(top + h / 2) << ")\">" << c.unit << "</text>\n";
  double legendX = left + 10;
  for (const Series &s : c.series) {
    os << "<polyline class=\"series\" data-name=\"" << s.name
       << "\" fill=\"none\" stroke=\"" << s.color
       << "\" stroke-width=\"1.5\" points=\"";
    for (size_t i = 0; i < s.points.size(); ++i)
      os << (i ? " " : "") << num(X(s.points[i].first)) << ","
         << num(Y(s.points[i].second));
    os << "\"/>\n";
    if (s.points.size() == 1 || s.name.rfind("eval_", 0) == 0)
      for (auto [x, y] : s.points)
        os << "<circle cx=\"" << num(X(x)) << "\" cy=\"" << num(Y(y))
           << "\" r=\"2.5\" fill=\"" << s.color << "\"/>\n";
    os << "<rect x=\"" << num(legendX) << "\" y=\"" << num(top - 18)
       << "\" width=\"12\" height=\"3\" fill=\"" << s.color << "\"/><text x=\""
       << num(legendX + 16) << "\" y=\"" << num(top - 13)
       << "\" font-size=\"12\">" << s.name << "</text>\n";
    legendX += 30 + 7 * double(s.name.size());
  }
  os << "</svg>\n";
}

/// Draws `c` onto `canvas` with its top edge at `y`: the same geometry and
/// colours as the SVG, the title at the right of the legend row.
void drawChart(Canvas &canvas, int y, const Chart &c) {
  const Rgb ink{34, 34, 34}, frame{153, 153, 153}, grid{228, 228, 228};
  const int left = int(Chart::left), top = y + int(Chart::top),
            w = int(Chart::w), h = int(Chart::h);
  canvas.fillRect(left, top, w, h, Rgb{250, 250, 250});
  for (double t : ticks(c.y0, c.y1, 5)) {
    int ty = y + int(std::lround(c.Y(t)));
    canvas.line(left, ty, left + w - 1, ty, grid);
    canvas.line(left - 4, ty, left - 1, ty, frame);
    std::string text = label(t);
    canvas.text(left - 7 - Canvas::textWidth(text), ty - 3, text, ink);
  }
  for (double t : ticks(c.x0, c.x1, 8)) {
    int tx = int(std::lround(c.X(t)));
    canvas.line(tx, top + h, tx, top + h + 4, frame);
    std::string text = label(t);
    canvas.text(tx - Canvas::textWidth(text) / 2, top + h + 8, text, ink);
  }
  // The frame over the grid lines' ends.
  canvas.line(left, top, left + w, top, frame);
  canvas.line(left, top + h, left + w, top + h, frame);
  canvas.line(left, top, left, top + h, frame);
  canvas.line(left + w, top, left + w, top + h, frame);
  canvas.text(left + w / 2 - Canvas::textWidth("step") / 2,
              y + int(Chart::height) - 14, "step", ink);
  canvas.textUp(8, top + h / 2 + Canvas::textWidth(c.unit) / 2, c.unit, ink);
  // The first series on top (the loss over the eval loss's points): each
  // keeps pixels of its colour at its points.
  for (auto it = c.series.rbegin(); it != c.series.rend(); ++it) {
    const Series &s = *it;
    Rgb color = Rgb::hex(s.color);
    for (size_t i = 1; i < s.points.size(); ++i)
      canvas.line(c.X(s.points[i - 1].first), y + c.Y(s.points[i - 1].second),
                  c.X(s.points[i].first), y + c.Y(s.points[i].second), color,
                  2);
    if (s.points.size() == 1 || s.name.rfind("eval_", 0) == 0)
      for (auto [px, py] : s.points)
        canvas.fillCircle(c.X(px), y + c.Y(py), 3, color);
  }
  int legendX = left + 10;
  for (const Series &s : c.series) {
    Rgb color = Rgb::hex(s.color);
    canvas.fillRect(legendX, top - 16, 12, 3, color);
    legendX += 16 + canvas.text(legendX + 16, top - 18, s.name, ink) + 14;
  }
  canvas.text(std::max(legendX + 20, left + w - Canvas::textWidth(c.title) * 2),
              top - 22, c.title, ink, 2);
}

/// Writes the charts stacked in one PNG; its tEXt "tcc:charts" holds one
/// line per chart "title|y_offset|x0|x1|y0|y1" (as the SVG's data-*).
int writePng(const std::string &out, const std::vector<Chart> &charts) {
  int height = int(Chart::height) * int(charts.size());
  Canvas canvas(int(Chart::width), height, Rgb{255, 255, 255});
  std::string axes;
  for (size_t i = 0; i < charts.size(); ++i) {
    int y = int(i) * int(Chart::height);
    drawChart(canvas, y, charts[i]);
    axes += charts[i].title + "|" + std::to_string(y) + "|" +
            exact(charts[i].x0) + "|" + exact(charts[i].x1) + "|" +
            exact(charts[i].y0) + "|" + exact(charts[i].y1) + "\n";
  }
  std::vector<uint8_t> png;
  std::string error;
  if (!canvas.encode(png, {{"Software", "tcc plot"}, {"tcc:charts", axes}},
                     error))
    return fail("-o " + out + ": " + error);
  std::ofstream os(out, std::ios::binary);
  if (!os)
    return fail("-o " + out + ": cannot write: " + std::strerror(errno));
  os.write(reinterpret_cast<const char *>(png.data()),
           std::streamsize(png.size()));
  os.close();
  if (!os)
    return fail("-o " + out + ": write error");
  std::cout << "wrote " << out << "\n";
  return 0;
}

} // namespace

int plotCommand(std::vector<std::string> args) {
  std::string log, out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--help" || args[i] == "-h") {
      std::cout << usage;
      return 0;
    }
    if (args[i] == "-o" || args[i] == "--output") {
      if (i + 1 >= args.size())
        return fail(args[i] + " needs a file name");
      out = args[++i];
    } else if (args[i].size() > 1 && args[i][0] == '-') {
      return fail(
          tcc::run::unknownFlagMessage(args[i], tcc::run::flagsInHelp(usage)));
    } else if (!log.empty()) {
      return fail("one log expected, got '" + log + "' and '" + args[i] + "'");
    } else {
      log = args[i];
    }
  }
  if (log.empty())
    return fail("no log given (the CSV of tcc run --log)");
  if (out.empty())
    return fail("-o CURVES.html or -o CURVES.png is required");
  auto endsWith = [&](const std::string &suffix) {
    return out.size() > suffix.size() &&
           out.compare(out.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  bool png = endsWith(".png");
  if (!png && !endsWith(".html"))
    return fail("-o " + out + ": the file name must end in .html or .png");
  std::ifstream in(log);
  if (!in)
    return fail(log + ": cannot open");
  std::string line;
  std::vector<std::string> columns;
  if (std::getline(in, line)) {
    std::stringstream header(line);
    for (std::string c; std::getline(header, c, ',');)
      columns.push_back(c);
  }
  if (columns.empty() || columns[0] != "step" ||
      std::find(columns.begin(), columns.end(), "loss") == columns.end())
    return fail(log + ": not a training log (its header must start with "
                      "step and name loss)");
  std::vector<std::vector<std::pair<double, double>>> data(columns.size());
  for (int row = 2; std::getline(in, line); ++row) {
    std::stringstream fields(line);
    std::vector<std::string> f;
    for (std::string v; std::getline(fields, v, ',');)
      f.push_back(v);
    char *end = nullptr;
    double step = f.empty() ? NAN : std::strtod(f[0].c_str(), &end);
    if (f.empty() || *end || !std::isfinite(step))
      return fail(log + ":" + std::to_string(row) + ": no step number");
    for (size_t c = 1; c < f.size() && c < columns.size(); ++c) {
      if (f[c].empty())
        continue;
      double v = std::strtod(f[c].c_str(), &end);
      if (!*end && std::isfinite(v))
        data[c].push_back({step, v});
    }
  }
  auto column = [&](const std::string &name) {
    auto it = std::find(columns.begin(), columns.end(), name);
    return it == columns.end() ? std::vector<std::pair<double, double>>()
                               : data[size_t(it - columns.begin())];
  };
  std::vector<Series> loss = {{"loss", "#1f77b4", column("loss")}};
  if (!column("eval_loss").empty())
    loss.push_back({"eval_loss", "#d62728", column("eval_loss")});
  std::vector<Chart> charts = {
      Chart("Loss", "loss", loss),
      Chart("Learning rate", "lr", {{"lr", "#2ca02c", column("lr")}}),
      Chart("Throughput", "samples or tokens / s",
            {{"throughput", "#9467bd", column("throughput")}})};
  if (!column("grad_norm").empty())
    charts.emplace_back(
        "Gradient norm", "L2 norm",
        std::vector<Series>{{"grad_norm", "#ff7f0e", column("grad_norm")}});
  if (!column("eval_accuracy").empty())
    charts.emplace_back("Eval accuracy", "accuracy",
                        std::vector<Series>{{"eval_accuracy", "#17becf",
                                             column("eval_accuracy")}});
  if (!column("loss_scale").empty())
    charts.emplace_back(
        "Loss scale", "scale",
        std::vector<Series>{{"loss_scale", "#8c564b", column("loss_scale")}});
  charts.erase(std::remove_if(charts.begin(), charts.end(),
                              [](const Chart &c) { return c.empty(); }),
               charts.end());
  if (png)
    return writePng(out, charts);
  std::ofstream os(out);
  if (!os)
    return fail("-o " + out + ": cannot write");
  os << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
     << "<title>tcc training curves</title>\n<style>\n"
     << "body{font-family:sans-serif;margin:2em;color:#222}\n"
     << "</style></head><body>\n<h1>tcc training curves</h1>\n<p>" << log
     << ": " << column("loss").size() << " steps</p>\n";
  for (const Chart &c : charts)
    svgChart(os, c);
  os << "</body></html>\n";
  os.close();
  if (!os)
    return fail("-o " + out + ": write error");
  std::cout << "wrote " << out << "\n";
  return 0;
}

} // namespace tcc::driver
