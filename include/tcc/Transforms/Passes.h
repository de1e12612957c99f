#ifndef TCC_TRANSFORMS_PASSES_H
#define TCC_TRANSFORMS_PASSES_H

#include "tcc/TccOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace tcc {

#define GEN_PASS_DECL
#include "tcc/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tcc/Transforms/Passes.h.inc"

} // namespace tcc

#endif // TCC_TRANSFORMS_PASSES_H
