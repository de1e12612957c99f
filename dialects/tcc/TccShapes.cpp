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

} // namespace tcc
