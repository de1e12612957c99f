#include "tcc/TccShapes.h"

#include <algorithm>

namespace tcc {

std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  llvm::SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

bool isBroadcastableTo(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[lead + i])
      return false;
  return true;
}

int64_t numElements(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t sliceLength(int64_t start, int64_t limit, int64_t stride) {
  if (stride > 0)
    return std::max<int64_t>(0, (limit - start + stride - 1) / stride);
  return std::max<int64_t>(0, (start - limit + (-stride) - 1) / (-stride));
}

const char *Window2d::invalid() const {
  if (kh < 1 || kw < 1)
    return "kernel sizes must be positive";
  if (sh < 1 || sw < 1)
    return "strides must be positive";
  if (dh < 1 || dw < 1)
    return "dilations must be positive";
  if (padTop < 0 || padLeft < 0 || padBottom < 0 || padRight < 0)
    return "pads must be non-negative";
  return "";
}

llvm::SmallVector<int64_t> AttentionDims::resultShape() const {
  if (tokenRows)
    return {batch, tq, heads * dv};
  return {batch, heads, tq, dv};
}

llvm::SmallVector<int64_t> AttentionDims::gradShape(int i) const {
  int64_t seq = i == 0 ? tq : tk, dim = i == 2 ? dv : d;
  if (tokenRows)
    return {batch, seq, heads * dim};
  return {batch, heads, seq, dim};
}

static std::string shapeText(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

std::optional<AttentionDims>
attentionDims(llvm::ArrayRef<int64_t> q, llvm::ArrayRef<int64_t> k,
              llvm::ArrayRef<int64_t> v, int64_t heads, int64_t headDim,
              const int64_t (&columns)[3], std::string &error) {
  AttentionDims a;
  const std::string shapes = "query " + shapeText(q) + ", key " + shapeText(k) +
                             " and value " + shapeText(v);
  if (heads < 0) {
    error = "heads must not be negative";
    return std::nullopt;
  }
  if (heads == 0) {
    if (q.size() != 4 || k.size() != 4 || v.size() != 4) {
      error = "query, key and value must be [batch, heads, seq, dim]";
      return std::nullopt;
    }
    if (q[0] != k[0] || q[1] != k[1] || k.take_front(3) != v.take_front(3)) {
      error = "batch, heads or key length disagree between " + shapes;
      return std::nullopt;
    }
    if (q[3] != k[3]) {
      error = "query and key head dims differ";
      return std::nullopt;
    }
    a.batch = q[0], a.heads = q[1], a.tq = q[2], a.tk = k[2], a.d = q[3];
    a.dv = v[3];
    return a;
  }
  if (q.size() != 3 || k.size() != 3 || v.size() != 3) {
    error = "query, key and value must be token rows [batch, seq, width] "
            "(heads = " + std::to_string(heads) + ")";
    return std::nullopt;
  }
  if (q[0] != k[0] || k[0] != v[0] || k[1] != v[1]) {
    error = "batch or key length disagree between " + shapes;
    return std::nullopt;
  }
  if (headDim <= 0) {
    error = "head_dim must be positive in token rows";
    return std::nullopt;
  }
  a.tokenRows = true;
  a.batch = q[0], a.heads = heads, a.tq = q[1], a.tk = k[1];
  a.d = a.dv = headDim;
  const char *names[3] = {"query", "key", "value"};
  llvm::ArrayRef<int64_t> shape[3] = {q, k, v};
  for (int i = 0; i < 3; ++i) {
    a.width[i] = shape[i][2], a.column[i] = columns[i];
    if (columns[i] < 0 || columns[i] + heads * headDim > a.width[i]) {
      error = std::string(names[i]) + " columns [" +
              std::to_string(columns[i]) + ", " +
              std::to_string(columns[i] + heads * headDim) +
              ") of its heads are outside its rows " + shapeText(shape[i]);
      return std::nullopt;
    }
  }
  return a;
}

} // namespace tcc
