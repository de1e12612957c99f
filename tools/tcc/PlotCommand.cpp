// `tcc plot LOG.csv -o curves.html`: the curves of a training run's --log
// CSV (runtime/run/csvlog.h) as one self-contained HTML page of inline SVG
// charts in the style of the compile report: the training loss with the
// eval loss when the log has one, the learning rate, the throughput and the
// loss scale when present. Each chart has ticked, labelled axes and a
// legend; each series is a <polyline class="series" data-name=COLUMN>.
#include "Commands.h"

#include "run/cli.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace tcc::driver {

namespace {

const char *usage = R"(usage: tcc plot LOG.csv -o CURVES.html

Draws the curves of a training run's --log CSV (tcc run / tcc train): loss
and eval loss, learning rate, throughput, loss scale. One self-contained HTML
file of inline SVG charts. (PNG is not written: save the page as an image
from a browser.)

  --output FILE, -o FILE  the HTML file to write
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

/// One chart: `title`, y axis `unit`, the series drawn over the steps.
void chart(std::ostream &os, const std::string &title, const std::string &unit,
           const std::vector<Series> &series) {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const Series &s : series)
    for (auto [x, y] : s.points) {
      x0 = std::min(x0, x), x1 = std::max(x1, x);
      y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  if (!std::isfinite(x0) || !std::isfinite(y0))
    return;
  if (x1 == x0)
    x1 = x0 + 1;
  if (y1 == y0) {
    y0 -= std::fabs(y0) * 0.5 + 0.5;
    y1 += std::fabs(y1) * 0.5 + 0.5;
  }
  double pad = (y1 - y0) * 0.05;
  y0 -= pad, y1 += pad;
  const double width = 720, height = 300, left = 70, right = 20, top = 30,
               bottom = 45, w = width - left - right, h = height - top - bottom;
  auto X = [&](double x) { return left + (x - x0) / (x1 - x0) * w; };
  auto Y = [&](double y) { return top + h - (y - y0) / (y1 - y0) * h; };
  os << "<h2>" << title << "</h2>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
     << "width=\"" << num(width) << "\" height=\"" << num(height)
     << "\" class=\"chart\" data-x0=\"" << exact(x0) << "\" data-x1=\""
     << exact(x1) << "\" data-y0=\"" << exact(y0) << "\" data-y1=\""
     << exact(y1) << "\">\n<rect x=\"" << num(left) << "\" y=\"" << num(top)
     << "\" width=\"" << num(w) << "\" height=\"" << num(h)
     << "\" fill=\"#fafafa\" stroke=\"#999\"/>\n";
  for (double t : ticks(y0, y1, 5))
    os << "<line x1=\"" << num(left) << "\" x2=\"" << num(left + w)
       << "\" y1=\"" << num(Y(t)) << "\" y2=\"" << num(Y(t))
       << "\" stroke=\"#e4e4e4\"/><text x=\"" << num(left - 6) << "\" y=\""
       << num(Y(t) + 4) << "\" font-size=\"11\" text-anchor=\"end\">"
       << label(t) << "</text>\n";
  for (double t : ticks(x0, x1, 8))
    os << "<line x1=\"" << num(X(t)) << "\" x2=\"" << num(X(t)) << "\" y1=\""
       << num(top + h) << "\" y2=\"" << num(top + h + 4)
       << "\" stroke=\"#999\"/><text x=\"" << num(X(t)) << "\" y=\""
       << num(top + h + 16) << "\" font-size=\"11\" text-anchor=\"middle\">"
       << label(t) << "</text>\n";
  os << "<text x=\"" << num(left + w / 2) << "\" y=\"" << num(height - 6)
     << "\" font-size=\"12\" text-anchor=\"middle\">step</text>\n"
     << "<text x=\"14\" y=\"" << num(top + h / 2)
     << "\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 14 "
     << num(top + h / 2) << ")\">" << unit << "</text>\n";
  double legendX = left + 10;
  for (const Series &s : series) {
    os << "<polyline class=\"series\" data-name=\"" << s.name
       << "\" fill=\"none\" stroke=\"" << s.color
       << "\" stroke-width=\"1.5\" points=\"";
    for (size_t i = 0; i < s.points.size(); ++i)
      os << (i ? " " : "") << num(X(s.points[i].first)) << ","
         << num(Y(s.points[i].second));
    os << "\"/>\n";
    if (s.points.size() == 1 || s.name == "eval_loss")
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
    return fail("-o CURVES.html is required");
  if (out.size() < 5 || out.compare(out.size() - 5, 5, ".html") != 0)
    return fail("-o " + out +
                ": only .html is written (PNG would need a rasterizer; save "
                "the page as an image from a browser)");
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
  std::ofstream os(out);
  if (!os)
    return fail("-o " + out + ": cannot write");
  os << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
     << "<title>tcc training curves</title>\n<style>\n"
     << "body{font-family:sans-serif;margin:2em;color:#222}\n"
     << "</style></head><body>\n<h1>tcc training curves</h1>\n<p>" << log
     << ": " << column("loss").size() << " steps</p>\n";
  std::vector<Series> loss = {{"loss", "#1f77b4", column("loss")}};
  if (!column("eval_loss").empty())
    loss.push_back({"eval_loss", "#d62728", column("eval_loss")});
  chart(os, "Loss", "loss", loss);
  chart(os, "Learning rate", "lr", {{"lr", "#2ca02c", column("lr")}});
  chart(os, "Throughput", "samples or tokens / s",
        {{"throughput", "#9467bd", column("throughput")}});
  if (!column("loss_scale").empty())
    chart(os, "Loss scale", "scale",
          {{"loss_scale", "#8c564b", column("loss_scale")}});
  os << "</body></html>\n";
  if (!os)
    return fail("-o " + out + ": write error");
  std::cout << "wrote " << out << "\n";
  return 0;
}

} // namespace tcc::driver
