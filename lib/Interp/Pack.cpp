// Pad-skipping's ops (tcc.pack_index, tcc.pack, tcc.unpack): the packed
// order of a key mask and rows moved into and out of it. Rows are copied as
// bytes, so every dtype is served; the run-time checks fail as the CPU
// backend's do.
#include "Kernel.h"

#include "tcc/TccOps.h"

#include <cstring>

namespace tcc::interp {
namespace {

using data::Array;

bool packIndexKernel(KernelContext &ctx) {
  const Array &mask = ctx.in(0u);
  int64_t batch = mask.shape[0], seq = mask.shape[1];
  int32_t *rows = ctx.out(0).data<int32_t>(), *cu = ctx.out(1).data<int32_t>();
  int32_t count = 0;
  auto token = [&](int64_t p, bool &ok) {
    if (mask.dtype == data::DType::Bool)
      return mask.data<uint8_t>()[p] != 0;
    double bias = mask.dtype == data::DType::F64 ? mask.data<double>()[p]
                                                 : mask.data<float>()[p];
    ok = bias == 0 || bias <= -1000.0;
    return bias == 0;
  };
  for (int64_t b = 0; b < batch; ++b) {
    cu[b] = count;
    for (int64_t t = 0; t < seq; ++t) {
      bool ok = true;
      bool isToken = token(b * seq + t, ok);
      if (!ok)
        return ctx.fail("the key mask's bias at (" + std::to_string(b) + ", " +
                        std::to_string(t) +
                        ") is neither 0 (a token) nor -1000 or below (padding)");
      if (isToken)
        rows[count++] = int32_t(b * seq + t);
    }
  }
  cu[batch] = count;
  for (int64_t i = count; i < batch * seq; ++i)
    rows[i] = -1;
  return true;
}

bool segmentIndexKernel(KernelContext &ctx) {
  const Array &pos = ctx.in(0u);
  int64_t batch = pos.shape[0], seq = pos.shape[1];
  int32_t *cu = ctx.out().data<int32_t>();
  auto at = [&](int64_t r) {
    return pos.dtype == data::DType::I64 ? pos.data<int64_t>()[r]
                                         : int64_t(pos.data<int32_t>()[r]);
  };
  int64_t count = 0;
  for (int64_t r = 0; r < batch * seq; ++r) {
    int64_t p = at(r);
    if (r % seq == 0 || p == 0) {
      cu[count++] = int32_t(r);
    } else if (p != at(r - 1) + 1) {
      return ctx.fail("position_ids at (" + std::to_string(r / seq) + ", " +
                      std::to_string(r % seq) + ") is " + std::to_string(p) +
                      ": a document's positions count 0, 1, 2, ... (0 starts "
                      "the next document)");
    }
  }
  for (int64_t s = count; s <= batch * seq; ++s)
    cu[s] = int32_t(batch * seq);
  return true;
}

/// Bytes per row of `a` laid out in `n` rows.
size_t rowBytes(const Array &a, int64_t n) { return a.bytes.size() / size_t(n); }

bool packKernel(KernelContext &ctx) {
  auto op = llvm::cast<PackOp>(ctx.op);
  const Array &in = ctx.in(0u), &rows = ctx.in(1u);
  Array &out = ctx.out();
  int64_t n = rows.numElements();
  size_t width = rowBytes(in, n), elem = data::dtypeSize(in.dtype);
  double fill = op.getFill().convertToDouble();
  // One row of `fill` in the input's dtype.
  Array fillRow;
  fillRow.dtype = in.dtype;
  fillRow.shape = {int64_t(width / elem)};
  fillRow.bytes.resize(width);
  bool ok = visitAny(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < fillRow.shape[0]; ++i)
      fillRow.data<T>()[i] = convertElement<T>(fill);
    return true;
  });
  if (!ok)
    return ctx.unsupportedDType(in);
  std::vector<bool> kept(size_t(n), false);
  const int32_t *index = rows.data<int32_t>();
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t *src = index[i] < 0 ? fillRow.bytes.data()
                                      : in.bytes.data() + index[i] * width;
    std::memcpy(out.bytes.data() + i * width, src, width);
    if (index[i] >= 0)
      kept[size_t(index[i])] = true;
  }
  if (!op.getCheckFill())
    return true;
  bool floats = in.dtype == data::DType::F32 || in.dtype == data::DType::F64;
  for (int64_t p = 0; p < n; ++p) {
    if (kept[size_t(p)])
      continue;
    bool holds = true;
    for (int64_t e = 0; e < int64_t(width / elem); ++e) {
      double x = floats ? (in.dtype == data::DType::F64
                               ? in.data<double>()[p * (width / elem) + e]
                               : in.data<float>()[p * (width / elem) + e])
                        : double(readInt(in, p * int64_t(width / elem) + e));
      holds &= x == fill;
    }
    if (!holds)
      return ctx.fail("padded row " + std::to_string(p) +
                      " does not hold the fill " + std::to_string(fill));
  }
  return true;
}

bool unpackKernel(KernelContext &ctx) {
  auto op = llvm::cast<UnpackOp>(ctx.op);
  const Array &in = ctx.in(0u), &rows = ctx.in(1u);
  Array &out = ctx.out();
  int64_t n = rows.numElements();
  size_t width = rowBytes(in, n);
  std::fill(out.bytes.begin(), out.bytes.end(), uint8_t(0));
  std::vector<bool> filled(size_t(n), false);
  const int32_t *index = rows.data<int32_t>();
  for (int64_t i = 0; i < n && index[i] >= 0; ++i) {
    std::memcpy(out.bytes.data() + index[i] * width,
                in.bytes.data() + i * width, width);
    filled[size_t(index[i])] = true;
  }
  int64_t seq = op.getSeq();
  for (int64_t b = 0; seq > 0 && b < n / seq; ++b)
    for (int64_t t = op.getReadBegin(); t < op.getReadEnd(); ++t)
      if (!filled[size_t(b * seq + t)])
        return ctx.fail("position " + std::to_string(t) + " of sequence " +
                        std::to_string(b) +
                        " is read after the packed layers but is padding");
  return true;
}

} // namespace

void registerPackKernels(KernelTable &t) {
  t[PackIndexOp::getOperationName()] = packIndexKernel;
  t[SegmentIndexOp::getOperationName()] = segmentIndexKernel;
  t[PackOp::getOperationName()] = packKernel;
  t[UnpackOp::getOperationName()] = unpackKernel;
}

} // namespace tcc::interp
