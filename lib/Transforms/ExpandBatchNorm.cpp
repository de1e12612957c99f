// tcc-expand-batch-norm: each tcc.batch_norm as tcc ops, in the mode its
// `training` attribute gives (TccBatchNorm.h's expandBatchNorm).
#include "tcc/Transforms/Passes.h"

#include "tcc/TccBatchNorm.h"

using namespace mlir;

namespace tcc {

#define GEN_PASS_DEF_EXPANDBATCHNORM
#include "tcc/Transforms/Passes.h.inc"

namespace {
struct ExpandBatchNormPass : impl::ExpandBatchNormBase<ExpandBatchNormPass> {
  void runOnOperation() override {
    SmallVector<BatchNormOp> ops;
    getOperation().walk([&](BatchNormOp op) { ops.push_back(op); });
    for (BatchNormOp op : ops) {
      OpBuilder b(op);
      BatchNormValues v = expandBatchNorm(b, op, BatchNormMode::AsOp);
      op.getResult().replaceAllUsesWith(v.result);
      op.getNewMean().replaceAllUsesWith(v.newMean);
      op.getNewVar().replaceAllUsesWith(v.newVar);
      op.erase();
    }
  }
};
} // namespace

} // namespace tcc
