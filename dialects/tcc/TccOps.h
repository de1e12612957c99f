#ifndef TCC_DIALECT_TCC_TCCOPS_H
#define TCC_DIALECT_TCC_TCCOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "tcc/TccShapes.h"
#include "tcc/TccTraits.h"

#include "tcc/TccDialect.h.inc"
#include "tcc/TccInterfaces.h.inc"
#include "tcc/TccEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "tcc/TccAttrs.h.inc"

#define GET_OP_CLASSES
#include "tcc/TccOps.h.inc"

#endif // TCC_DIALECT_TCC_TCCOPS_H
