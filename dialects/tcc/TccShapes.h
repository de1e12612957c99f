// Shape rules shared by the verifiers, the importer and the interpreter.
#ifndef TCC_DIALECT_TCC_TCCSHAPES_H
#define TCC_DIALECT_TCC_TCCSHAPES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include <cstdint>
#include <optional>
#include <string>

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

/// The dims of tcc.attention and tcc.attention_grad: heads first (query
/// [B, H, Tq, D], key [B, H, Tk, D], value [B, H, Tk, Dv]) or, with the
/// `heads` attribute > 0, token rows (query [B, Tq, Wq] holding the heads'
/// features at columns [column, column + H * D), likewise key and value;
/// Dv == D).
struct AttentionDims {
  int64_t batch = 0, heads = 0, tq = 0, tk = 0, d = 0, dv = 0;
  bool tokenRows = false;
  /// Token rows: the query, key and value row widths and first columns.
  int64_t width[3] = {0, 0, 0}, column[3] = {0, 0, 0};

  /// The result's (and the result gradient's) shape.
  llvm::SmallVector<int64_t> resultShape() const;
  /// attention_grad's result for operand i (0 query, 1 key, 2 value).
  llvm::SmallVector<int64_t> gradShape(int i) const;
};

/// The dims from the operand shapes and the layout attributes (`heads`,
/// `head_dim`, the three columns); nullopt with `error` set when they do not
/// fit together.
std::optional<AttentionDims>
attentionDims(llvm::ArrayRef<int64_t> q, llvm::ArrayRef<int64_t> k,
              llvm::ArrayRef<int64_t> v, int64_t heads, int64_t headDim,
              const int64_t (&columns)[3], std::string &error);

} // namespace tcc

#endif // TCC_DIALECT_TCC_TCCSHAPES_H
