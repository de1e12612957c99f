//===- IndexExpr.h - index arithmetic of the generated kernels -*- C++ -*-===//
//
// The C++ index expressions KernelEmitter.cpp writes: a strided view's flat
// index, one coordinate of a row-major flat index, row-major strides
// (broadcastIndexExpr, the numpy-broadcast index, is public:
// KernelEmitter.h). Pure string arithmetic over static shapes.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_LIB_CODEGEN_INDEXEXPR_H
#define TCC_LIB_CODEGEN_INDEXEXPR_H

#include "mlir/Support/LLVM.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace tcc::codegen {

/// The flat index of the element read at flat index `index` of the strided
/// view `shape` / `strides` (element strides of the underlying buffer,
/// possibly 0 or negative) starting at `base`.
std::string stridedIndexExpr(llvm::ArrayRef<int64_t> shape,
                             llvm::ArrayRef<int64_t> strides, int64_t base,
                             llvm::StringRef index);
/// Coordinate `d` of flat index `index` of a row-major `shape`.
std::string coordExpr(llvm::ArrayRef<int64_t> shape, size_t d,
                      llvm::StringRef index);
llvm::SmallVector<int64_t> rowMajorStrides(llvm::ArrayRef<int64_t> shape);
int64_t product(llvm::ArrayRef<int64_t> dims);

} // namespace tcc::codegen

#endif // TCC_LIB_CODEGEN_INDEXEXPR_H
