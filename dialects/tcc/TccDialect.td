#ifndef TCC_DIALECT_TD
#define TCC_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Tcc_Dialect : Dialect {
  let name = "tcc";
  let cppNamespace = "::tcc";
  let summary = "Graph-level tensor dialect of the tcc training compiler";
  let description = [{
    Ops with value (tensor) semantics over statically shaped ranked tensors.
    High-level ops (matmul, layer_norm, softmax, attention, embedding) exist
    wherever a fast kernel or a dedicated gradient rule needs them, so later
    passes can match them without rediscovering patterns.
  }];
  let hasConstantMaterializer = 1;
  let useDefaultAttributePrinterParser = 1;
}

def Tcc_CmpPredicate : I32EnumAttr<"CmpPredicate", "comparison predicate", [
    I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"ne", 1>,
    I32EnumAttrCase<"lt", 2>, I32EnumAttrCase<"le", 3>,
    I32EnumAttrCase<"gt", 4>, I32EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::tcc";
  let genSpecializedAttr = 0;
}
def Tcc_CmpPredicateAttr : EnumAttr<Tcc_Dialect, Tcc_CmpPredicate, "cmp_predicate">;

def Tcc_GeluApprox : I32EnumAttr<"GeluApprox", "GELU approximation", [
    I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"tanh", 1>]> {
  let cppNamespace = "::tcc";
  let genSpecializedAttr = 0;
}
def Tcc_GeluApproxAttr : EnumAttr<Tcc_Dialect, Tcc_GeluApprox, "gelu_approx">;

#endif // TCC_DIALECT_TD
