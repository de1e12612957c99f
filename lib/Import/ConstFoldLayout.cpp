// Import-time data movement on constants: the index arithmetic shared with
// the elementwise folds (broadcasting), and Transpose, Slice, Expand, Concat
// and Gather of known tensors.
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

DenseElementsAttr foldTranspose(DenseElementsAttr a,
                                llvm::ArrayRef<int64_t> perm) {
  auto in = toLit(a);
  if (!in)
    return nullptr;
  std::vector<int64_t> inStrides = stridesOf(in->shape());
  llvm::SmallVector<int64_t> shape, strides;
  for (int64_t p : perm) {
    shape.push_back(in->shape()[p]);
    strides.push_back(inStrides[p]);
  }
  auto type = RankedTensorType::get(shape, in->type.getElementType());
  return fromLit(selectElements(*in, type, stridedView(shape, 0, strides)));
}

DenseElementsAttr foldSlice(DenseElementsAttr a, llvm::ArrayRef<int64_t> starts,
                            llvm::ArrayRef<int64_t> limits,
                            llvm::ArrayRef<int64_t> strides) {
  auto in = toLit(a);
  if (!in)
    return nullptr;
  std::vector<int64_t> inStrides = stridesOf(in->shape());
  llvm::SmallVector<int64_t> shape, srcStrides;
  int64_t base = 0;
  for (size_t d = 0; d < starts.size(); ++d) {
    shape.push_back(sliceLength(starts[d], limits[d], strides[d]));
    srcStrides.push_back(strides[d] * inStrides[d]);
    if (shape.back() > 0)
      base += starts[d] * inStrides[d];
  }
  auto type = RankedTensorType::get(shape, in->type.getElementType());
  return fromLit(
      selectElements(*in, type, stridedView(shape, base, srcStrides)));
}

DenseElementsAttr foldBroadcast(DenseElementsAttr a,
                                llvm::ArrayRef<int64_t> shape) {
  auto type = RankedTensorType::get(shape, a.getElementType());
  if (a.isSplat())
    return DenseElementsAttr::get(type, a.getSplatValue<Attribute>());
  if (numElements(shape) > kMaxFoldElements)
    return nullptr;
  auto in = toLit(a);
  if (!in)
    return nullptr;
  return fromLit(selectElements(*in, type, broadcastIndex(in->shape(), shape)));
}

DenseElementsAttr foldConcat(llvm::ArrayRef<DenseElementsAttr> parts,
                             int64_t axis) {
  auto first = llvm::cast<RankedTensorType>(parts.front().getType());
  llvm::SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  std::vector<Lit> lits;
  for (DenseElementsAttr p : parts) {
    auto lit = toLit(p);
    if (!lit)
      return nullptr;
    shape[axis] += lit->shape()[axis];
    lits.push_back(std::move(*lit));
  }
  if (numElements(shape) > kMaxFoldElements)
    return nullptr;
  int64_t outer = numElements(llvm::ArrayRef(shape).take_front(axis));
  Lit out;
  out.type = RankedTensorType::get(shape, first.getElementType());
  for (int64_t o = 0; o < outer; ++o) {
    for (const Lit &lit : lits) {
      int64_t chunk = numElements(lit.shape().drop_front(axis));
      for (int64_t k = o * chunk; k < (o + 1) * chunk; ++k) {
        if (lit.isFloat())
          out.floats.push_back(lit.f(k));
        else
          out.ints.push_back(lit.i(k));
      }
    }
  }
  return fromLit(out);
}

DenseElementsAttr foldGather(DenseElementsAttr data, DenseElementsAttr indices,
                             int64_t axis) {
  auto in = toLit(data);
  auto idx = toLit(indices);
  if (!in || !idx)
    return nullptr;
  llvm::ArrayRef<int64_t> dshape = in->shape();
  llvm::SmallVector<int64_t> shape(dshape.take_front(axis));
  llvm::append_range(shape, idx->shape());
  llvm::append_range(shape, dshape.drop_front(axis + 1));
  if (numElements(shape) > kMaxFoldElements)
    return nullptr;
  int64_t outer = numElements(dshape.take_front(axis));
  int64_t inner = numElements(dshape.drop_front(axis + 1));
  int64_t dim = dshape[axis], count = idx->numElements();
  std::vector<int64_t> src;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < count; ++j) {
      int64_t i = idx->i(j) < 0 ? idx->i(j) + dim : idx->i(j);
      for (int64_t k = 0; k < inner; ++k)
        src.push_back((o * dim + i) * inner + k);
    }
  auto type = RankedTensorType::get(shape, in->type.getElementType());
  return fromLit(selectElements(*in, type, src));
}

} // namespace tcc::onnx_import
