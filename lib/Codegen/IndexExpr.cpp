//===- IndexExpr.cpp - index arithmetic of the generated kernels ----------===//

#include "IndexExpr.h"

#include "tcc/Codegen/KernelEmitter.h"

using namespace mlir;

namespace tcc::codegen {

/// The flat index of `v`'s element read at flat index `index` of the
/// strided view `shape` / `strides` (element strides of the underlying
/// buffer, possibly 0 or negative) starting at `base`: base + sum over dims of
/// coord(index, d) * strides[d]. Size-1 dims are dropped and dims that are
/// contiguous in the buffer merged, so the arithmetic stays short.
std::string stridedIndexExpr(ArrayRef<int64_t> shape, ArrayRef<int64_t> strides,
                             int64_t base, StringRef index) {
  struct Dim {
    int64_t size, stride;
  };
  SmallVector<Dim> dims;
  for (auto [size, stride] : llvm::zip_equal(shape, strides)) {
    if (size == 1)
      continue;
    if (!dims.empty() && dims.back().stride == stride * size) {
      dims.back() = {dims.back().size * size, stride};
      continue;
    }
    dims.push_back({size, stride});
  }
  std::string expr;
  int64_t inner = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    if (dims[d].stride != 0) {
      std::string coord = inner == 1 ? index.str()
                                     : index.str() + " / " + std::to_string(inner);
      if (d > 0) // the outermost coordinate is below its size already
        coord += " % " + std::to_string(dims[d].size);
      std::string term = dims[d].stride == 1
                             ? coord
                             : "(" + coord + ") * " +
                                   (dims[d].stride < 0
                                        ? "(" + std::to_string(dims[d].stride) + ")"
                                        : std::to_string(dims[d].stride));
      expr = expr.empty() ? term : term + " + " + expr;
    }
    inner *= dims[d].size;
  }
  if (base != 0)
    expr = expr.empty() ? std::to_string(base)
                        : std::to_string(base) + " + " + expr;
  return expr.empty() ? "0" : expr;
}

/// Coordinate `d` of flat index `index` of a row-major `shape`.
std::string coordExpr(ArrayRef<int64_t> shape, size_t d, StringRef index) {
  if (shape[d] == 1)
    return "0";
  int64_t inner = 1;
  for (size_t k = d + 1; k < shape.size(); ++k)
    inner *= shape[k];
  bool outermost = true;
  for (size_t k = 0; k < d; ++k)
    outermost &= shape[k] == 1;
  std::string coord =
      inner == 1 ? index.str() : index.str() + " / " + std::to_string(inner);
  return outermost ? coord : coord + " % " + std::to_string(shape[d]);
}

SmallVector<int64_t> rowMajorStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

std::string broadcastIndexExpr(ArrayRef<int64_t> input,
                               ArrayRef<int64_t> output, StringRef index) {
  if (input.size() > output.size())
    return "";
  // Merge consecutive output dims that are all kept or all broadcast; kept
  // runs are contiguous in the input because its skipped dims have size 1.
  struct Run {
    int64_t size;
    bool kept;
  };
  SmallVector<Run> runs;
  size_t lead = output.size() - input.size();
  for (size_t k = 0; k < output.size(); ++k) {
    int64_t in = k < lead ? 1 : input[k - lead];
    if (output[k] == 1)
      continue; // coordinate 0 whatever the input does
    if (in != 1 && in != output[k])
      return "";
    bool kept = in != 1;
    if (!runs.empty() && runs.back().kept == kept)
      runs.back().size *= output[k];
    else
      runs.push_back({output[k], kept});
  }
  std::string expr;
  int64_t inner = 1, stride = 1;
  for (size_t r = runs.size(); r-- > 0;) {
    if (runs[r].kept) {
      std::string coord = inner == 1 ? index.str()
                                     : index.str() + " / " + std::to_string(inner);
      if (r > 0) // the outermost run's coordinate is below its size already
        coord += " % " + std::to_string(runs[r].size);
      std::string term =
          stride == 1 ? coord : "(" + coord + ") * " + std::to_string(stride);
      expr = expr.empty() ? term : term + " + " + expr;
      stride *= runs[r].size;
    }
    inner *= runs[r].size;
  }
  return expr.empty() ? "0" : expr;
}

} // namespace tcc::codegen
