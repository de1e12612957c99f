// The canvas and PNG encoder of `tcc plot -o curves.png` (PlotPng.h).
#include "PlotPng.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace tcc::driver {

namespace {

/// 5x7 glyphs, one row a byte, the leftmost column in bit 4 (after the
/// HD44780 character ROM). Upper case is drawn in lower case.
struct Glyph {
  char c;
  uint8_t rows[7];
};
constexpr Glyph glyphs[] = {
    {'0', {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}},
    {'1', {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'2', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}},
    {'3', {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E}},
    {'4', {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}},
    {'5', {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E}},
    {'6', {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}},
    {'7', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
    {'8', {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}},
    {'9', {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C}},
    {'.', {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C}},
    {'-', {0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00}},
    {'+', {0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00}},
    {'_', {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1F}},
    {'/', {0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00}},
    {':', {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00}},
    {'(', {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02}},
    {')', {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08}},
    {'a', {0x00, 0x00, 0x0E, 0x01, 0x0F, 0x11, 0x0F}},
    {'b', {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1E}},
    {'c', {0x00, 0x00, 0x0E, 0x10, 0x10, 0x11, 0x0E}},
    {'d', {0x01, 0x01, 0x0D, 0x13, 0x11, 0x11, 0x0F}},
    {'e', {0x00, 0x00, 0x0E, 0x11, 0x1F, 0x10, 0x0E}},
    {'f', {0x06, 0x09, 0x08, 0x1C, 0x08, 0x08, 0x08}},
    {'g', {0x00, 0x0F, 0x11, 0x11, 0x0F, 0x01, 0x0E}},
    {'h', {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11}},
    {'i', {0x04, 0x00, 0x0C, 0x04, 0x04, 0x04, 0x0E}},
    {'j', {0x02, 0x00, 0x06, 0x02, 0x02, 0x12, 0x0C}},
    {'k', {0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12}},
    {'l', {0x0C, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'m', {0x00, 0x00, 0x1A, 0x15, 0x15, 0x11, 0x11}},
    {'n', {0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11}},
    {'o', {0x00, 0x00, 0x0E, 0x11, 0x11, 0x11, 0x0E}},
    {'p', {0x00, 0x00, 0x1E, 0x11, 0x1E, 0x10, 0x10}},
    {'q', {0x00, 0x00, 0x0D, 0x13, 0x0F, 0x01, 0x01}},
    {'r', {0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10}},
    {'s', {0x00, 0x00, 0x0E, 0x10, 0x0E, 0x01, 0x1E}},
    {'t', {0x08, 0x08, 0x1C, 0x08, 0x08, 0x09, 0x06}},
    {'u', {0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0D}},
    {'v', {0x00, 0x00, 0x11, 0x11, 0x11, 0x0A, 0x04}},
    {'w', {0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0A}},
    {'x', {0x00, 0x00, 0x11, 0x0A, 0x04, 0x0A, 0x11}},
    {'y', {0x00, 0x00, 0x11, 0x11, 0x0F, 0x01, 0x0E}},
    {'z', {0x00, 0x00, 0x1F, 0x02, 0x04, 0x08, 0x1F}},
};

const Glyph *glyph(char c) {
  if (c >= 'A' && c <= 'Z')
    c = char(c - 'A' + 'a');
  for (const Glyph &g : glyphs)
    if (g.c == c)
      return &g;
  return nullptr;
}

void put32(std::vector<uint8_t> &out, uint32_t v) {
  for (int shift : {24, 16, 8, 0})
    out.push_back(uint8_t(v >> shift));
}

void chunk(std::vector<uint8_t> &png, const char *type,
           const std::vector<uint8_t> &data) {
  put32(png, uint32_t(data.size()));
  size_t start = png.size();
  png.insert(png.end(), type, type + 4);
  png.insert(png.end(), data.begin(), data.end());
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, png.data() + start, uInt(png.size() - start));
  put32(png, uint32_t(crc));
}

} // namespace

Rgb Rgb::hex(const std::string &text) {
  unsigned long v = std::strtoul(text.c_str() + (text[0] == '#'), nullptr, 16);
  return {uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)};
}

Canvas::Canvas(int width, int height, Rgb background)
    : w(width), h(height), rgb(size_t(width) * size_t(height) * 3) {
  fillRect(0, 0, width, height, background);
}

void Canvas::pixel(int x, int y, Rgb c) {
  if (x < 0 || y < 0 || x >= w || y >= h)
    return;
  uint8_t *p = &rgb[(size_t(y) * size_t(w) + size_t(x)) * 3];
  p[0] = c.r, p[1] = c.g, p[2] = c.b;
}

void Canvas::fillRect(int x, int y, int width, int height, Rgb c) {
  for (int j = std::max(y, 0); j < std::min(y + height, h); ++j)
    for (int i = std::max(x, 0); i < std::min(x + width, w); ++i)
      pixel(i, j, c);
}

void Canvas::line(double x0, double y0, double x1, double y1, Rgb c,
                  int thickness) {
  double dx = x1 - x0, dy = y1 - y0;
  int n = int(std::ceil(std::max(std::fabs(dx), std::fabs(dy)))) + 1;
  int lo = -(thickness - 1) / 2, hi = thickness / 2;
  for (int k = 0; k <= n; ++k) {
    double t = n ? double(k) / n : 0;
    int x = int(std::lround(x0 + t * dx)), y = int(std::lround(y0 + t * dy));
    for (int a = lo; a <= hi; ++a)
      for (int b = lo; b <= hi; ++b)
        pixel(x + a, y + b, c);
  }
}

void Canvas::fillCircle(double cx, double cy, double r, Rgb c) {
  for (int y = int(std::floor(cy - r)); y <= int(std::ceil(cy + r)); ++y)
    for (int x = int(std::floor(cx - r)); x <= int(std::ceil(cx + r)); ++x)
      if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r)
        pixel(x, y, c);
}

int Canvas::text(int x, int y, const std::string &s, Rgb c, int scale) {
  int cx = x;
  for (char ch : s) {
    if (const Glyph *g = glyph(ch))
      for (int row = 0; row < 7; ++row)
        for (int col = 0; col < 5; ++col)
          if (g->rows[row] >> (4 - col) & 1)
            fillRect(cx + col * scale, y + row * scale, scale, scale, c);
    cx += 6 * scale;
  }
  return cx - x;
}

void Canvas::textUp(int x, int y, const std::string &s, Rgb c) {
  int cy = y;
  for (char ch : s) {
    if (const Glyph *g = glyph(ch))
      for (int row = 0; row < 7; ++row)
        for (int col = 0; col < 5; ++col)
          if (g->rows[row] >> (4 - col) & 1)
            pixel(x + row, cy - col, c);
    cy -= 6;
  }
}

bool Canvas::encode(
    std::vector<uint8_t> &png,
    const std::vector<std::pair<std::string, std::string>> &texts,
    std::string &error) const {
  static const uint8_t signature[] = {0x89, 'P',  'N',  'G',
                                      '\r', '\n', 0x1A, '\n'};
  png.assign(std::begin(signature), std::end(signature));
  std::vector<uint8_t> header;
  put32(header, uint32_t(w));
  put32(header, uint32_t(h));
  // 8 bits, colour type 2 (RGB), deflate, filter method 0, no interlace.
  header.insert(header.end(), {8, 2, 0, 0, 0});
  chunk(png, "IHDR", header);
  for (const auto &[key, value] : texts) {
    std::vector<uint8_t> data(key.begin(), key.end());
    data.push_back(0);
    data.insert(data.end(), value.begin(), value.end());
    chunk(png, "tEXt", data);
  }
  // Each row: filter type 0 (none), then its pixels.
  std::vector<uint8_t> raw;
  raw.reserve(size_t(h) * (size_t(w) * 3 + 1));
  for (int y = 0; y < h; ++y) {
    raw.push_back(0);
    auto row = rgb.begin() + std::ptrdiff_t(size_t(y) * size_t(w) * 3);
    raw.insert(raw.end(), row, row + std::ptrdiff_t(w) * 3);
  }
  uLongf size = compressBound(uLong(raw.size()));
  std::vector<uint8_t> deflated(size);
  if (compress2(deflated.data(), &size, raw.data(), uLong(raw.size()), 9) !=
      Z_OK) {
    error = "zlib could not compress the image";
    return false;
  }
  deflated.resize(size);
  chunk(png, "IDAT", deflated);
  chunk(png, "IEND", {});
  return true;
}

} // namespace tcc::driver
