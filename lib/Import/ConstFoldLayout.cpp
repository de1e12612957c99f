// Index arithmetic on constants for the import-time-only evaluations
// (integer Mod's broadcasting, ConstOnly.cpp's CumSum and gathers).
#include "ConstFold.h"

#include "tcc/TccShapes.h"

using namespace mlir;

namespace tcc::onnx_import {

std::vector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

int64_t flatIndex(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> index,
                  llvm::ArrayRef<int64_t> strides) {
  int64_t flat = 0;
  for (size_t d = 0; d < index.size(); ++d) {
    int64_t i = index[d] < 0 ? index[d] + shape[d] : index[d];
    if (i < 0 || i >= shape[d])
      return -1;
    flat += i * strides[d];
  }
  return flat;
}

std::vector<int64_t> indexRowsFlat(const Lit &indices,
                                   llvm::ArrayRef<int64_t> shape,
                                   int64_t &bad) {
  const int64_t k = int64_t(shape.size());
  std::vector<int64_t> strides = stridesOf(shape), out;
  bad = -1;
  llvm::SmallVector<int64_t> multi(static_cast<size_t>(k), 0);
  for (int64_t row = 0; row < indices.numElements() / k; ++row) {
    for (int64_t j = 0; j < k; ++j)
      multi[size_t(j)] = indices.i(row * k + j);
    int64_t at = flatIndex(shape, multi, strides);
    if (at < 0) {
      bad = row;
      return {};
    }
    out.push_back(at);
  }
  return out;
}

std::vector<int64_t> elementTargetsFlat(const Lit &indices,
                                        llvm::ArrayRef<int64_t> shape,
                                        int64_t axis, int64_t &bad) {
  const int64_t rank = int64_t(shape.size());
  std::vector<int64_t> strides = stridesOf(shape),
                       idxStrides = stridesOf(indices.shape()), out;
  bad = -1;
  llvm::SmallVector<int64_t> multi(static_cast<size_t>(rank), 0);
  for (int64_t e = 0; e < indices.numElements(); ++e) {
    for (int64_t d = 0, rest = e; d < rank; ++d) {
      multi[size_t(d)] = rest / idxStrides[size_t(d)];
      rest %= idxStrides[size_t(d)];
    }
    multi[size_t(axis)] = indices.i(e);
    int64_t at = flatIndex(shape, multi, strides);
    if (at < 0) {
      bad = e;
      return {};
    }
    out.push_back(at);
  }
  return out;
}

/// Flat source index of every element of a `shape`-shaped view whose element
/// at multi-index i is source element base + sum(i[d] * srcStrides[d]).
std::vector<int64_t> stridedView(llvm::ArrayRef<int64_t> shape, int64_t base,
                                 llvm::ArrayRef<int64_t> srcStrides) {
  int64_t n = numElements(shape);
  std::vector<int64_t> out(n);
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t src = base;
  for (int64_t k = 0; k < n; ++k) {
    out[k] = src;
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
      src += srcStrides[d];
      if (++idx[d] < shape[d])
        break;
      src -= srcStrides[d] * shape[d];
      idx[d] = 0;
    }
  }
  return out;
}

/// For broadcasting `from` to `to`: source index of every element of `to`.
std::vector<int64_t> broadcastIndex(llvm::ArrayRef<int64_t> from,
                                    llvm::ArrayRef<int64_t> to) {
  std::vector<int64_t> fromStrides = stridesOf(from);
  std::vector<int64_t> strides(to.size(), 0);
  size_t lead = to.size() - from.size();
  for (size_t d = 0; d < from.size(); ++d)
    strides[lead + d] = from[d] == 1 ? 0 : fromStrides[d];
  return stridedView(to, 0, strides);
}

/// `in` permuted/selected by flat source indices into a tensor of `type`.
Lit selectElements(const Lit &in, RankedTensorType type,
                   const std::vector<int64_t> &src) {
  Lit out;
  out.type = type;
  if (in.splat && type.getNumElements() > 1) {
    out.splat = true;
    out.ints = in.ints;
    out.floats = in.floats;
    return out;
  }
  for (int64_t s : src) {
    if (in.isFloat())
      out.floats.push_back(in.f(s));
    else
      out.ints.push_back(in.i(s));
  }
  return out;
}

} // namespace tcc::onnx_import
