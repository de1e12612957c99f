// Shape rules shared by the verifiers, the importer and the interpreter.
#ifndef TCC_DIALECT_TCC_TCCSHAPES_H
#define TCC_DIALECT_TCC_TCCSHAPES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include <cstdint>
#include <optional>

namespace tcc {

/// Numpy broadcast of two shapes; nullopt when they are incompatible.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// True when `from` broadcasts numpy-style to exactly `to`.
bool isBroadcastableTo(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to);

/// Product of the dims.
int64_t numElements(llvm::ArrayRef<int64_t> shape);

/// Result length of a slice with the clamped (start, limit, stride).
int64_t sliceLength(int64_t start, int64_t limit, int64_t stride);

/// The window of a 2-D convolution or pooling (tcc.conv, tcc.max_pool,
/// tcc.avg_pool and their gradients): kernel size, strides, padding before
/// and after each spatial dim, dilation.
struct Window2d {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1;
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  int64_t dh = 1, dw = 1;

  /// Output rows / columns for an input of `h` / `w`; <= 0 when the dilated
  /// window does not fit the padded input.
  int64_t outH(int64_t h) const { return outDim(h, padTop + padBottom, kh, sh, dh); }
  int64_t outW(int64_t w) const { return outDim(w, padLeft + padRight, kw, sw, dw); }
  static int64_t outDim(int64_t in, int64_t pads, int64_t k, int64_t s, int64_t d) {
    int64_t span = in + pads - d * (k - 1) - 1;
    return span < 0 ? 0 : span / s + 1;
  }
  /// Empty when valid, else what is wrong ("stride_h must be positive").
  const char *invalid() const;
};

} // namespace tcc

#endif // TCC_DIALECT_TCC_TCCSHAPES_H
