// exec.fusion and exec.call: run the body op by op with the same kernels as
// the unlowered graph, so lowering cannot change a single bit of the
// results. That holds for every fusion body kind: elementwise ops and the
// layout or reduction op with its prologue and epilogue are ordinary tcc ops
// to runBlock (the prologue is computed whole here, where generated code
// evaluates it per element read; the values are the same). A call's body is
// its one library op. Collectives run at world size 1, where every result
// is its operand.
#include "Kernel.h"

#include "exec/ExecOps.h"

using namespace mlir;
using tcc::data::Array;

namespace tcc::interp {
namespace {

/// Runs the isolated body of `ctx.op` (exec.fusion, exec.call) on its
/// operands; its yielded values are the op's results.
bool body(KernelContext &ctx) {
  Block &block = ctx.op->getRegion(0).front();
  // The body is isolated from above: its arguments are all it reads.
  llvm::DenseMap<Value, Array> values;
  for (auto [arg, input] :
       llvm::zip(block.getArguments(), ctx.op->getOperands()))
    values[arg] = ctx.in(input);
  std::vector<Array> yielded;
  std::string error;
  if (!runBlock(block, values, ctx.opts(), yielded, error))
    return ctx.fail(error);
  for (size_t i = 0; i < yielded.size(); ++i)
    ctx.out(i) = std::move(yielded[i]);
  return true;
}

/// A collective of one rank: every result is its operand.
bool oneRank(KernelContext &ctx) {
  if (auto op = llvm::dyn_cast<exec::ReduceScatterOp>(ctx.op);
      op && op.getWorldSizeAttr().getInt() != 1)
    return ctx.fail("the interpreter runs one rank; this reduce_scatter "
                    "needs world_size " +
                    std::to_string(op.getWorldSizeAttr().getInt()));
  if (auto op = llvm::dyn_cast<exec::AllGatherOp>(ctx.op);
      op && op.getWorldSizeAttr().getInt() != 1)
    return ctx.fail("the interpreter runs one rank; this all_gather needs "
                    "world_size " +
                    std::to_string(op.getWorldSizeAttr().getInt()));
  for (unsigned i = 0; i < ctx.op->getNumOperands(); ++i)
    ctx.out(i) = ctx.in(ctx.op->getOperand(i));
  return true;
}

/// exec.view: the source's elements from the offset on, as many as the
/// result holds.
bool view(KernelContext &ctx) {
  auto op = llvm::cast<exec::ViewOp>(ctx.op);
  const Array &in = ctx.in(0u);
  Array &out = ctx.out();
  size_t size = data::dtypeSize(in.dtype);
  auto begin = in.bytes.begin() + op.getOffset() * int64_t(size);
  out.bytes.assign(begin, begin + out.numElements() * int64_t(size));
  return true;
}

} // namespace

void registerFusionKernels(KernelTable &table) {
  table["exec.view"] = view;
  table["exec.fusion"] = body;
  table["exec.call"] = body;
  table["exec.all_reduce"] = oneRank;
  table["exec.reduce_scatter"] = oneRank;
  table["exec.all_gather"] = oneRank;
}

} // namespace tcc::interp
