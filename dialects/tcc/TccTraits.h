//===- TccTraits.h - How tcc ops execute ------------------------*- C++ -*-===//
//
// The C++ side of TccTraits.td: marker traits that passes query with
// `op->hasTrait<tcc::OpClass::Elementwise>()` instead of listing ops.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_DIALECT_TCC_TCCTRAITS_H
#define TCC_DIALECT_TCC_TCCTRAITS_H

#include "mlir/IR/OpDefinition.h"

namespace tcc::OpClass {

template <typename ConcreteType>
class Elementwise : public mlir::OpTrait::TraitBase<ConcreteType, Elementwise> {
};

template <typename ConcreteType>
class Structured : public mlir::OpTrait::TraitBase<ConcreteType, Structured> {};

template <typename ConcreteType>
class Layout : public mlir::OpTrait::TraitBase<ConcreteType, Layout> {};

template <typename ConcreteType>
class View : public mlir::OpTrait::TraitBase<ConcreteType, View> {};

} // namespace tcc::OpClass

#endif // TCC_DIALECT_TCC_TCCTRAITS_H
