//===- PlotPng.h - an RGB canvas and its PNG encoding for tcc plot -*- C++ -*-//
//
// What `tcc plot -o curves.png` draws with: lines, filled rectangles and
// circles, and text in a built-in 5x7 pixel font, encoded as an 8-bit RGB
// PNG (zlib for the IDAT stream and the chunk CRCs). No image library.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_TOOLS_TCC_PLOTPNG_H
#define TCC_TOOLS_TCC_PLOTPNG_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tcc::driver {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  /// "#rrggbb".
  static Rgb hex(const std::string &text);
};

class Canvas {
public:
  Canvas(int width, int height, Rgb background);
  int width() const { return w; }
  int height() const { return h; }

  void pixel(int x, int y, Rgb c);
  void fillRect(int x, int y, int width, int height, Rgb c);
  /// A line `thickness` pixels wide from (x0, y0) to (x1, y1).
  void line(double x0, double y0, double x1, double y1, Rgb c,
            int thickness = 1);
  void fillCircle(double cx, double cy, double r, Rgb c);
  /// Text with its top-left corner at (x, y); characters without a glyph
  /// are blank. Returns the width drawn (6 pixels a character at scale 1).
  int text(int x, int y, const std::string &s, Rgb c, int scale = 1);
  /// Text rotated 90 degrees counter-clockwise, reading upwards from (x, y).
  void textUp(int x, int y, const std::string &s, Rgb c);
  static int textWidth(const std::string &s) { return 6 * int(s.size()); }

  /// The PNG file: 8-bit RGB, one tEXt chunk per `texts` entry (keyword,
  /// text). False with `error` when zlib fails.
  bool encode(std::vector<uint8_t> &png,
              const std::vector<std::pair<std::string, std::string>> &texts,
              std::string &error) const;

private:
  int w, h;
  std::vector<uint8_t> rgb;
};

} // namespace tcc::driver

#endif // TCC_TOOLS_TCC_PLOTPNG_H
