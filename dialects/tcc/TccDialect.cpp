#include "tcc/TccBatchNorm.h"
#include "tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace tcc;

#include "tcc/TccDialect.cpp.inc"
#include "tcc/TccEnums.cpp.inc"
#include "tcc/TccInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "tcc/TccAttrs.cpp.inc"

void TccDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "tcc/TccOps.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "tcc/TccBatchNorm.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "tcc/TccAttrs.cpp.inc"
      >();
}

Operation *TccDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                           Type type, Location loc) {
  auto elements = llvm::dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}
