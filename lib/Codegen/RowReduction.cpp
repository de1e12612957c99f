// Kernel source for exec.fusion, the row-reduction half (KernelWriter.h): a
// fusion whose reduction covers the innermost dims (a per-token max over the
// logits, a sum of a row, a full reduction) keeps the host's one loop per
// output, and on the device gets a group of threads per row (a warp or a
// block, launchShape) striding the row with coalesced loads, their
// partials combined in shared memory in a fixed tree.
#include "KernelWriter.h"

#include "tcc/Codegen/KernelEmitter.h"

#include "IndexExpr.h"

using namespace mlir;

namespace tcc::codegen::detail {

std::optional<RowReduction> rowReduction(exec::FusionOp fusion) {
  if (columnReduction(fusion))
    return std::nullopt;
  Operation *op = nullptr;
  for (Operation &o : fusion.getBody().front()) {
    if (!llvm::isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp>(o))
      continue;
    if (op)
      return std::nullopt; // two reductions (no fusion makes these)
    op = &o;
  }
  if (!op)
    return std::nullopt;
  ArrayRef<int64_t> in = shapeOf(op->getOperand(0));
  SmallVector<int64_t> axes(
      op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef());
  llvm::sort(axes);
  if (axes.empty())
    return std::nullopt;
  size_t lead = in.size() - axes.size();
  for (size_t a = 0; a < axes.size(); ++a)
    if (axes[a] != int64_t(lead + a))
      return std::nullopt; // not the innermost dims
  RowReduction rr{op, product(in.drop_front(lead)), product(in.take_front(lead))};
  auto outType = llvm::cast<RankedTensorType>(fusion.getResult().getType());
  if (outType.getNumElements() != rr.rows || !accumulation(op, rr.count))
    return std::nullopt; // an epilogue that broadcasts the rows, or i1
  return rr;
}

LaunchShape rowLaunchShape(const RowReduction &rr) {
  if (rr.count < kRowGroupMin)
    return {};
  // One slice of the rows (grid.y 1), no workspace.
  if (rr.count < kRowWarpMax)
    return {8, 256, 1, 0};
  return {1, rr.count < kRowBlockMax ? 256 : 1024, 1, 0};
}

bool KernelWriter::writeRowReduction() {
  std::optional<RowReduction> rr = rowReduction(fusion);
  if (!rr)
    return false;
  LaunchShape shape = rowLaunchShape(*rr);
  if (shape.outputsPerBlock == 0)
    return false;
  Operation *op = rr->op;
  Value input = op->getOperand(0);
  Accumulation acc = *accumulation(op, rr->count);
  // A float max / min carries the row index of its value (pick_max), so
  // the tree keeps the in-order loop's choice among equal values.
  const bool indexed = !acc.sum && acc.isFloat;
  const std::string count = std::to_string(rr->count);
  const std::string rowsPerBlock = std::to_string(shape.outputsPerBlock);
  const std::string threads = std::to_string(shape.blockThreads);
  // Folds the element `x` at row position `r` into the thread's partial.
  auto fold = [&](const std::string &x, const std::string &r) {
    if (indexed)
      line(std::string("tcc_k::pick_") + (acc.isMax ? "max" : "min") +
           "(acc, at, " + x + ", " + r + ");");
    else
      line("acc = " + acc.step("acc", x) + ";");
  };
  // On the device: a group of `per` threads per output row (a block's
  // threads over P rows, P = the plan's "outputs_per_block"), lane k taking
  // elements k, k + per, ... in order (four loads in flight), then the
  // partials combined in a fixed tree (lane k with lane k + s, s halving),
  // so a launch gives the same bits run to run. Max / min give the host's
  // bits; sums in double the host's in practice (exact for all but widely
  // ranged data), not by construction. Blocks over the launch shape's
  // threads (the shared arrays' size) or not a multiple of P take the
  // one-thread-per-output loop below.
  os << "#if TCC_KERNEL_GRID\n";
  os << "  // A row reduction of " << count << " elements: "
     << (shape.outputsPerBlock == 1 ? "a block" : "a warp")
     << " per row, partials combined in a fixed tree.\n";
  depth = 1;
  open(shape.outputsPerBlock == 1
           ? "if (blockDim.x <= " + threads + ")"
           : "if (blockDim.x <= " + threads + " && blockDim.x >= " +
                 rowsPerBlock + " && blockDim.x % " + rowsPerBlock + " == 0)");
  line("__shared__ " + acc.accType + " part[" + threads + "];");
  if (indexed)
    line("__shared__ int64_t part_at[" + threads + "];");
  line("const int per = int(blockDim.x / " + rowsPerBlock +
       "), t = int(threadIdx.x), lane = t % per;");
  line("int span = 1;");
  line("while (span < per) span *= 2;");
  open("for (int64_t i0 = begin + int64_t(blockIdx.x) * " + rowsPerBlock +
       "; i0 < end; i0 += int64_t(gridDim.x) * " + rowsPerBlock + ")");
  line("const int64_t i = i0 + t / per;");
  line(acc.accType + " acc = " + acc.init + ";");
  if (indexed)
    line("int64_t at = INT64_MAX;");
  open("if (i < end)");
  line("int64_t r = lane;");
  open("for (; r + 3 * per < " + count + "; r += 4 * per)");
  std::vector<std::string> xs, rs;
  for (int k = 0; k < 4; ++k) {
    std::string rk = "rk" + std::to_string(k);
    line("const int64_t " + rk + " = r + " + std::to_string(k) + " * per;");
    xs.push_back(valueAt(input, "i * " + count + " + " + rk));
    rs.push_back(rk);
    if (failed)
      return true;
  }
  for (int k = 0; k < 4; ++k)
    fold(xs[k], rs[k]);
  close();
  open("for (; r < " + count + "; r += per)");
  std::string x = valueAt(input, "i * " + count + " + r");
  if (failed)
    return true;
  fold(x, "r");
  close();
  close();
  line("part[t] = acc;");
  if (indexed)
    line("part_at[t] = at;");
  line("__syncthreads();");
  open("for (int s = span / 2; s > 0; s /= 2)");
  open("if (lane < s && lane + s < per)");
  if (indexed)
    line(std::string("tcc_k::pick_") + (acc.isMax ? "max" : "min") +
         "(part[t], part_at[t], part[t + s], part_at[t + s]);");
  else
    line("part[t] = " + acc.step("part[t]", "part[t + s]") + ";");
  close();
  line("__syncthreads();");
  close();
  // Lane 0 writes the row's output: the reduction's value (rounded to a
  // 16-bit result type, as valueAt does), then the fusion's epilogue.
  open("if (lane == 0 && i < end)");
  std::string name = fresh("v");
  line("const " + acc.type + " " + name + " = " + acc.result("part[t]") + ";");
  Value result = op->getResult(0);
  std::string half = halfName(elementType(result)).str();
  if (!half.empty()) {
    std::string rounded = fresh("v");
    line("const float " + rounded + " = tcc_k::round_" + half + "(" + name +
         ");");
    name = rounded;
  }
  // The epilogue reads the reduction at the output index, as the output
  // (same elements) or broadcast to it (a scalar's "0").
  auto outType = llvm::cast<RankedTensorType>(fusion.getResult().getType());
  scopes.back()[{result.getAsOpaquePointer(), "i"}] = name;
  scopes.back()[{result.getAsOpaquePointer(),
                 broadcastIndexExpr(shapeOf(result), outType.getShape(), "i")}] =
      name;
  std::string out = outputElement();
  if (failed)
    return true;
  line("out[i] = " + out + ";");
  close();
  line("__syncthreads();");
  close();
  line("return;");
  close();
  os << "#endif\n";
  next = 0;
  return true;
}

} // namespace tcc::codegen::detail
