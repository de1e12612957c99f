#ifndef TCC_INTERFACES_TD
#define TCC_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Tcc_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::tcc";
  let description = [{
    An op that knows its vector-Jacobian product. Reverse-mode autodiff
    (`tcc::buildGradients`, the `tcc-autodiff` pass) walks the ops backwards
    and asks each for the gradients of its operands given those of its
    results; it never special-cases an op. Rules are written in tcc ops, with
    dedicated backward ops (softmax_grad, layer_norm_grad, attention_grad,
    ...) where a rule would otherwise expand into many small ops.
  }];
  let methods = [
    InterfaceMethod<[{
        Emits, at the builder's insertion point, the gradient of the loss
        with respect to each operand. `resultGrads` has one entry per result:
        the gradient of the loss with respect to it, or null when none flows
        (treat it as zero). Appends exactly one entry per operand to
        `operandGrads`: its gradient, with the operand's type, or null when
        the operand is not differentiable (integer, boolean) or gets none.
      }],
      "::llvm::LogicalResult", "buildVjp",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::ValueRange":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // TCC_INTERFACES_TD
