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

def Tcc_LibraryCallOpInterface : OpInterface<"LibraryCallOpInterface"> {
  let cppNamespace = "::tcc";
  let description = [{
    An op the runtime executes as a library call: a hand-written kernel per
    backend (GEMMs, attention, normalisations, the fused loss, embedding,
    dropout, optimizer updates), a "call" step of the plan. Its operands and
    results in ODS order and its attributes with their defaults are the
    plan's and the runtime's op table: `tcc-tblgen -gen-runtime-op-table`
    writes `runtime/plan/library_ops.inc` from these ops, and
    `-gen-library-call-defs` the two accessors below, so no other file spells
    an op's operands.
  }];
  let methods = [
    InterfaceMethod<[{
        Whether this op is executed as a library call. An op may be one only
        in some forms (gather_grad: along axis 0, the embedding gradient;
        other axes are a generated kernel).
      }],
      "bool", "isLibraryCall", (ins), "", [{ return true; }]>,
    InterfaceMethod<[{
        The operands in ODS order, null for an absent optional operand
        (the plan writes -1).
      }],
      "::llvm::SmallVector<::mlir::Value>", "getCallOperands">,
    InterfaceMethod<[{
        The results in ODS order, null for an absent optional result.
      }],
      "::llvm::SmallVector<::mlir::Value>", "getCallResults">,
    InterfaceMethod<[{
        Floating-point operations of one execution, the compute half of the
        cost model that rematerialisation ranks recomputation by
        (docs/architecture.md). The default, a few operations per result
        element, fits the normalisations, softmax, dropout, the loss and
        embedding; contractions (GEMMs, attention) declare their own.
      }],
      "int64_t", "getFlops", (ins), "", [{
        int64_t elements = 0;
        for (::mlir::Value r : $_op->getResults())
          if (auto t = ::llvm::dyn_cast<::mlir::RankedTensorType>(r.getType()))
            elements += t.getNumElements();
        return 5 * elements;
      }]>,
  ];
}

def Tcc_InPlaceOpInterface : OpInterface<"InPlaceOpInterface"> {
  let cppNamespace = "::tcc";
  let description = [{
    An op whose results may be written into the storage of an operand they
    replace (an optimizer update: new parameter over the parameter, new
    moments over the moments). Memory planning takes the operand's storage
    when the operand dies at this op and has the result's size; kernels of
    such ops read each element before writing it.
  }];
  let methods = [
    InterfaceMethod<[{
        The operand whose storage result #`result` may take over, or null.
      }],
      "::mlir::Value", "getInPlaceOperand", (ins "unsigned":$result)>,
  ];
}

#endif // TCC_INTERFACES_TD
