// exec.fusion: runs the kernel's body op by op with the same kernels as the
// unfused graph, so fusion cannot change a single bit of the results. That
// holds for every body kind: elementwise ops and the layout or reduction op
// with its prologue and epilogue are ordinary tcc ops to runBlock (the
// prologue is computed whole here, where generated code evaluates it per
// element read; the values are the same).
#include "Kernel.h"

#include "exec/ExecOps.h"

using namespace mlir;
using tcc::data::Array;

namespace tcc::interp {
namespace {

bool fusion(KernelContext &ctx) {
  auto op = llvm::cast<exec::FusionOp>(ctx.op);
  Block &body = op.getBody().front();
  // The body is isolated from above: its arguments are all it reads.
  llvm::DenseMap<Value, Array> values;
  for (auto [arg, input] : llvm::zip(body.getArguments(), op.getInputs()))
    values[arg] = ctx.in(input);
  std::vector<Array> yielded;
  std::string error;
  if (!runBlock(body, values, ctx.opts(), yielded, error))
    return ctx.fail(error);
  ctx.out() = std::move(yielded.front());
  return true;
}

} // namespace

void registerFusionKernels(KernelTable &table) {
  table["exec.fusion"] = fusion;
}

} // namespace tcc::interp
