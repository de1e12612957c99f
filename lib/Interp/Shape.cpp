// Data movement kernels: broadcast, reshape, transpose, slice, concat,
// split, gather, embedding. They move whole elements as bytes, so they work
// for every element type.
#include "Kernel.h"

#include "tcc/TccOps.h"

#include <cstring>

using namespace mlir;
using tcc::data::Array;

namespace tcc::interp {
namespace {

/// memcpy, but a no-op for empty copies (whose pointers may be null).
void copyBytes(uint8_t *dst, const uint8_t *src, size_t n) {
  if (n)
    std::memcpy(dst, src, n);
}

/// out[i] = in[map(i)] for every element of `out`.
void gatherElements(const Array &in, Array &out, const IndexMap &map) {
  size_t size = data::dtypeSize(in.dtype);
  for (int64_t i = 0, n = out.numElements(); i < n; ++i)
    copyBytes(out.bytes.data() + i * size, in.bytes.data() + map(i) * size,
              size);
}

bool broadcastKernel(KernelContext &ctx) {
  const Array &in = ctx.in(0u);
  gatherElements(in, ctx.out(), IndexMap::broadcast(in.shape, ctx.out().shape));
  return true;
}

bool reshapeKernel(KernelContext &ctx) {
  ctx.out().bytes = ctx.in(0u).bytes;
  return true;
}

bool transposeKernel(KernelContext &ctx) {
  const Array &in = ctx.in(0u);
  llvm::ArrayRef<int64_t> perm = llvm::cast<TransposeOp>(ctx.op).getPerm();
  SmallVector<int64_t> inStrides = stridesOf(in.shape), strides;
  for (int64_t p : perm)
    strides.push_back(inStrides[p]);
  gatherElements(in, ctx.out(), IndexMap::strided(ctx.out().shape, strides));
  return true;
}

bool sliceKernel(KernelContext &ctx) {
  auto op = llvm::cast<SliceOp>(ctx.op);
  const Array &in = ctx.in(0u);
  SmallVector<int64_t> inStrides = stridesOf(in.shape), strides;
  int64_t base = 0;
  for (size_t d = 0; d < in.shape.size(); ++d) {
    // A negative stride walks down from `start`; the offsets just go down.
    base += op.getStarts()[d] * inStrides[d];
    strides.push_back(op.getStrides()[d] * inStrides[d]);
  }
  gatherElements(in, ctx.out(),
                 IndexMap::strided(ctx.out().shape, strides, base));
  return true;
}

/// Views a tensor along `axis` as [outer, dim(axis) * inner] rows.
struct AxisView {
  int64_t outer, rowBytes;
  AxisView(const Array &a, int64_t axis)
      : outer(product(llvm::ArrayRef(a.shape).take_front(axis))),
        rowBytes(product(llvm::ArrayRef(a.shape).drop_front(axis)) *
                 static_cast<int64_t>(data::dtypeSize(a.dtype))) {}
};

bool concatKernel(KernelContext &ctx) {
  int64_t axis = llvm::cast<ConcatOp>(ctx.op).getAxis();
  Array &out = ctx.out();
  AxisView outView(out, axis);
  int64_t column = 0; // byte offset of the current input inside an out row
  for (Value v : ctx.op->getOperands()) {
    const Array &in = ctx.in(v);
    AxisView inView(in, axis);
    for (int64_t o = 0; o < outView.outer; ++o)
      copyBytes(out.bytes.data() + o * outView.rowBytes + column,
                in.bytes.data() + o * inView.rowBytes, inView.rowBytes);
    column += inView.rowBytes;
  }
  return true;
}

bool splitKernel(KernelContext &ctx) {
  int64_t axis = llvm::cast<SplitOp>(ctx.op).getAxis();
  const Array &in = ctx.in(0u);
  AxisView inView(in, axis);
  int64_t column = 0;
  for (unsigned r = 0; r < ctx.op->getNumResults(); ++r) {
    Array &out = ctx.out(r);
    AxisView outView(out, axis);
    for (int64_t o = 0; o < inView.outer; ++o)
      copyBytes(out.bytes.data() + o * outView.rowBytes,
                in.bytes.data() + o * inView.rowBytes + column,
                outView.rowBytes);
    column += outView.rowBytes;
  }
  return true;
}

bool gatherKernel(KernelContext &ctx) {
  auto op = llvm::cast<GatherOp>(ctx.op);
  const Array &in = ctx.in(op.getData()), &indices = ctx.in(op.getIndices());
  Array &out = ctx.out();
  int64_t axis = op.getAxis();
  int64_t dim = in.shape[axis];
  int64_t outer = product(llvm::ArrayRef(in.shape).take_front(axis));
  int64_t inner = product(llvm::ArrayRef(in.shape).drop_front(axis + 1));
  int64_t count = indices.numElements();
  size_t chunk = inner * data::dtypeSize(in.dtype);
  if (!checkGatherIndices(ctx, indices, axis, dim))
    return false;
  for (int64_t j = 0; j < count; ++j) {
    int64_t index = readInt(indices, j);
    if (index < 0)
      index += dim;
    for (int64_t o = 0; o < outer; ++o)
      copyBytes(out.bytes.data() + (o * count + j) * chunk,
                in.bytes.data() + (o * dim + index) * chunk, chunk);
  }
  return true;
}

bool embeddingKernel(KernelContext &ctx) {
  auto op = llvm::cast<EmbeddingOp>(ctx.op);
  const Array &table = ctx.in(op.getTable()), &ids = ctx.in(op.getIds());
  Array &out = ctx.out();
  int64_t vocab = table.shape[0];
  size_t row = table.shape[1] * data::dtypeSize(table.dtype);
  for (int64_t j = 0, n = ids.numElements(); j < n; ++j) {
    int64_t id = readInt(ids, j);
    // Unlike gather, an embedding id never counts from the end (as in PyTorch).
    if (id < 0 || id >= vocab)
      return ctx.fail("id " + std::to_string(id) +
                      " is out of range for a vocabulary of " +
                      std::to_string(vocab));
    copyBytes(out.bytes.data() + j * row, table.bytes.data() + id * row, row);
  }
  return true;
}

} // namespace

bool checkGatherIndices(KernelContext &ctx, const Array &indices, int64_t axis,
                        int64_t dim) {
  for (int64_t j = 0, n = indices.numElements(); j < n; ++j) {
    int64_t index = readInt(indices, j);
    if (index < -dim || index >= dim)
      return ctx.fail("index " + std::to_string(index) +
                      " is out of range for dim " + std::to_string(axis) +
                      " of size " + std::to_string(dim));
  }
  return true;
}

void registerShapeKernels(KernelTable &t) {
  t[BroadcastOp::getOperationName()] = broadcastKernel;
  t[ReshapeOp::getOperationName()] = reshapeKernel;
  t[TransposeOp::getOperationName()] = transposeKernel;
  t[SliceOp::getOperationName()] = sliceKernel;
  t[ConcatOp::getOperationName()] = concatKernel;
  t[SplitOp::getOperationName()] = splitKernel;
  t[GatherOp::getOperationName()] = gatherKernel;
  t[EmbeddingOp::getOperationName()] = embeddingKernel;
}

} // namespace tcc::interp
