// tcc-lower-calls: library ops become exec.call, and a conversion target
// states what a lowered step function may hold (see Passes.td).
#include "tcc/Transforms/Passes.h"

#include "exec/ExecOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace tcc {
#define GEN_PASS_DEF_LOWERCALLS
#include "tcc/Transforms/Passes.h.inc"
} // namespace tcc

using namespace mlir;
using namespace tcc;

namespace {

/// op(%a, %b) -> exec.call (%a, %b) { ^bb0(%x, %y): op(%x, %y); yield }.
struct WrapLibraryCall : OpInterfaceConversionPattern<LibraryCallOpInterface> {
  using OpInterfaceConversionPattern::OpInterfaceConversionPattern;

  LogicalResult
  matchAndRewrite(LibraryCallOpInterface call, ArrayRef<Value> operands,
                  ConversionPatternRewriter &rewriter) const override {
    Operation *op = call;
    if (!call.isLibraryCall())
      return rewriter.notifyMatchFailure(op, "not a library call in this form");
    auto wrapper = exec::CallOp::create(rewriter, op->getLoc(),
                                        op->getResultTypes(), operands);
    SmallVector<Location> locs(operands.size(), op->getLoc());
    Block *body = rewriter.createBlock(&wrapper.getBody(), {},
                                       ValueRange(operands).getTypes(), locs);
    // By position: an operand may repeat (attention over one q/k/v tensor),
    // and each position reads its own argument.
    Operation *inner = rewriter.clone(*op);
    inner->setOperands(body->getArguments());
    exec::YieldOp::create(rewriter, op->getLoc(), inner->getResults());
    rewriter.replaceOp(op, wrapper.getResults());
    return success();
  }
};

/// Whatever no other pattern legalizes gets one error naming it.
struct NoKernel : ConversionPattern {
  NoKernel(MLIRContext *context)
      : ConversionPattern(MatchAnyOpTypeTag(), /*benefit=*/0, context) {}

  LogicalResult matchAndRewrite(Operation *op, ArrayRef<Value>,
                                ConversionPatternRewriter &) const override {
    return op->emitOpError("has no kernel or library call in the runtime "
                           "(a lowered step holds exec.fusion kernels, "
                           "library calls, views, constants and parameter "
                           "reads)");
  }
};

struct LowerCallsPass : tcc::impl::LowerCallsBase<LowerCallsPass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    ConversionTarget target(*context);
    target.addLegalDialect<exec::ExecDialect>();
    target.addLegalOp<func::FuncOp, func::ReturnOp, ConstantOp, GetParamOp>();
    // What a kernel or a call runs is legal where it is; the one created in
    // a new exec.call is checked as it is made, hence the parent test.
    target.addDynamicallyLegalDialect<TccDialect>([](Operation *op) {
      return op->hasTrait<OpClass::View>() ||
             llvm::isa<exec::FusionOp, exec::CallOp>(op->getParentOp());
    });
    target.markOpRecursivelyLegal<exec::FusionOp, exec::CallOp>();

    RewritePatternSet patterns(context);
    patterns.add<WrapLibraryCall>(context);
    patterns.add<NoKernel>(context);
    if (failed(
            applyFullConversion(getOperation(), target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
