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

} // namespace tcc

#endif // TCC_DIALECT_TCC_TCCSHAPES_H
