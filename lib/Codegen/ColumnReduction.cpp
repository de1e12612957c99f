// Kernel source for a column reduction (a float sum or mean over leading
// dims, e.g. a bias gradient over the tokens; KernelWriter.h): the host's
// blocked loop, and the CUDA block path with its launch shape (a block of
// 32 warps per 32 outputs and slice of the rows; with several slices, a
// second stage in the last block of each column tile).
#include "KernelWriter.h"

#include "tcc/Codegen/KernelEmitter.h"

#include "IndexExpr.h"

using namespace mlir;

namespace tcc::codegen::detail {

std::optional<ColumnReduction> columnReduction(exec::FusionOp fusion) {
  Block &body = fusion.getBody().front();
  auto yield = llvm::cast<exec::YieldOp>(body.getTerminator());
  Operation *op = yield.getValues()[0].getDefiningOp();
  // A 16-bit result: the f32 sum, rounded once as it leaves.
  StringRef half;
  if (auto cast = llvm::dyn_cast_or_null<CastOp>(op)) {
    half = halfName(elementType(cast.getResult()));
    op = cast.getInput().getDefiningOp();
    if (half.empty() || !op || !op->hasOneUse() ||
        !elementType(op->getResult(0)).isF32())
      return std::nullopt;
  }
  if (!op || !llvm::isa<ReduceSumOp, ReduceMeanOp>(op))
    return std::nullopt;
  Value input = op->getOperand(0);
  Type elem = elementType(input);
  if (!elem.isF32() && !elem.isF64())
    return std::nullopt;
  ArrayRef<int64_t> in = shapeOf(input);
  SmallVector<int64_t> axes(llvm::isa<ReduceSumOp>(op)
                                ? llvm::cast<ReduceSumOp>(op).getAxes()
                                : llvm::cast<ReduceMeanOp>(op).getAxes());
  llvm::sort(axes);
  for (size_t a = 0; a < axes.size(); ++a)
    if (axes[a] != int64_t(a))
      return std::nullopt; // not the leading dims
  int64_t count = product(in.take_front(axes.size()));
  int64_t inner = product(in.drop_front(axes.size()));
  if (axes.empty() || count < 2 || inner < 2)
    return std::nullopt;
  return ColumnReduction{op, count, inner, half};
}

/// The row slices of a column reduction's block path: enough that no warp
/// sums more than kBlockReduceWarpRows rows, and more, up to slices of
/// kBlockReduceRows rows, until the launch fills a wave. Each slice has
/// ceil(rows / slices) rows (the last the rest), none empty.
static int64_t rowSlices(const ColumnReduction &cr) {
  const int64_t tiles = llvm::divideCeil(cr.inner, kBlockReduceColumns);
  const int64_t warps = kBlockReduceThreads / 32;
  int64_t slices = llvm::divideCeil(cr.count, kBlockReduceWarpRows * warps);
  int64_t wave =
      llvm::divideCeil(kBlockReduceWave, tiles * kBlockReduceThreads);
  int64_t most = std::max<int64_t>(1, cr.count / kBlockReduceRows);
  slices = std::min<int64_t>(std::max(slices, std::min(wave, most)), 65535);
  return llvm::divideCeil(cr.count, llvm::divideCeil(cr.count, slices));
}

bool KernelWriter::writeColumnReduction() {
  std::optional<ColumnReduction> cr = columnReduction(fusion);
  if (!cr)
    return false;
  Operation *op = cr->op;
  Value input = op->getOperand(0);
  const int64_t count = cr->count, inner = cr->inner;
  const std::string countText = std::to_string(count);
  // Output element i sums in[i + r * inner] over r in order, as the scalar
  // loop does; the host computes Block consecutive outputs at once, with the
  // loop over them innermost, so the compiler vectorises across outputs and
  // each output's sum keeps its order (the same bits).
  std::string type = ctype(input);
  auto resultOf = [&](const std::string &acc) {
    std::string sum =
        llvm::isa<ReduceMeanOp>(op)
            ? "static_cast<" + type + ">(" + acc + " / static_cast<double>(" +
                  countText + "))"
            : "static_cast<" + type + ">(" + acc + ")";
    // A 16-bit output's bits, rounded as the cast after the sum rounds it.
    return cr->half.empty() ? sum
                            : "tcc_k::f32_to_" + cr->half.str() + "(" + sum + ")";
  };
  constexpr int64_t Block = 64;
  os << "#if !TCC_KERNEL_GRID\n";
  os << "  // A column reduction: " << Block
     << " outputs at a time, each summed in order.\n";
  depth = 1;
  open("for (int64_t i0 = begin; i0 < end; i0 += " + std::to_string(Block) +
       ")");
  line("const int64_t n0 = end - i0 < " + std::to_string(Block) +
       " ? end - i0 : " + std::to_string(Block) + ";");
  line("double acc[" + std::to_string(Block) + "];");
  line("for (int64_t l = 0; l < n0; ++l) acc[l] = 0.0;");
  open("for (int64_t r = 0; r < " + countText + "; ++r)");
  open("for (int64_t l = 0; l < n0; ++l)");
  line("const int64_t i = i0 + l;");
  std::string x = valueAt(input, "i + r * " + std::to_string(inner));
  if (failed)
    return true;
  line("acc[l] = acc[l] + static_cast<double>(" + x + ");");
  close();
  close();
  line("for (int64_t l = 0; l < n0; ++l) out[i0 + l] = " + resultOf("acc[l]") +
       ";");
  close();
  line("return;");
  os << "#endif\n";
  const LaunchShape shape = launchShape(fusion);
  if (shape.outputsPerBlock == 0) {
    next = 0;
    return true;
  }
  // On the device: one block per 32 consecutive outputs and slice of the
  // rows (the launch has ceil(n / 32) x gridDim.y blocks of 1024 threads,
  // plan "outputs_per_block" and "row_slices"), its warps taking every
  // (warps)-th row of the slice, so each warp reads 32 adjacent columns of
  // a row; the warps' double partial sums are added in warp order. With
  // one slice the block writes the outputs. With several, each block
  // writes its 32 sums to the workspace (inputs[N + stores],
  // "workspace_bytes":
  // [slice][column] doubles, then a counter per column tile), and the
  // block that arrives last at a tile's counter adds the slices' sums in
  // slice order, writes the outputs and sets the counter back to 0 for the
  // next launch: the order of the adds is fixed by the launch, never by
  // which block finished when. Sums in double are exact for all but
  // widely ranged data, so this gives the host's bits in practice, not by
  // construction. Other block shapes (not whole warps) take the
  // one-thread-per-output loop below. The CUDA thread emulation runs it
  // too (a block's threads as host threads, tcc_kernel.h).
  const int64_t slices = shape.rowSlices;
  const int64_t tileColumns =
      llvm::divideCeil(inner, kBlockReduceColumns) * kBlockReduceColumns;
  const std::string sums = std::to_string(slices * tileColumns);
  const std::string columns = std::to_string(tileColumns);
  os << "#if TCC_KERNEL_GRID\n";
  os << "  // A column reduction of " << countText
     << " rows: a block per 32 outputs";
  if (slices > 1)
    os << " and slice of rows (" << slices << " slices)";
  os << ", its warps splitting the rows.\n";
  open("if (blockDim.x % 32 == 0 && blockDim.x <= 1024)");
  line("__shared__ double part[32][33];");
  line("const int lane = int(threadIdx.x % 32), w = int(threadIdx.x / 32);");
  line("const int warps = int(blockDim.x / 32);");
  std::string first = "int64_t r = w;", bound = countText;
  if (slices > 1) {
    // gridDim.y slices (at most the plan's row_slices, which sized the
    // workspace); 1 needs no workspace.
    line("__shared__ bool last;");
    line("const int64_t slices = int64_t(gridDim.y);");
    line("const int64_t per = (" + countText + " + slices - 1) / slices;");
    line("const int64_t rowBegin = int64_t(blockIdx.y) * per;");
    line("const int64_t rowEnd = rowBegin + per < " + countText +
         " ? rowBegin + per : " + countText + ";");
    line("double *sums = slices > 1 ? static_cast<double *>(const_cast<void "
         "*>(inputs[" +
         std::to_string(fusion.getInputs().size() + fusion.getStores().size()) +
         "])) : nullptr;");
    first = "int64_t r = rowBegin + w;";
    bound = "rowEnd";
  }
  open("for (int64_t i0 = begin + int64_t(blockIdx.x) * 32; i0 < end; "
       "i0 += int64_t(gridDim.x) * 32)");
  line("const int64_t i = i0 + lane;");
  line("double acc = 0.0;");
  open("if (i < end)");
  // Eight rows per round, their loads issued before the adds (a warp's
  // rows are latency-bound otherwise: one load in flight); the adds keep
  // the row order.
  line(first);
  open("for (; r + 7 * warps < " + bound + "; r += 8 * warps)");
  std::vector<std::string> xs;
  for (int k = 0; k < 8; ++k) {
    std::string rk = "r" + std::to_string(k);
    line("const int64_t " + rk + " = r + " + std::to_string(k) + " * warps;");
    xs.push_back(valueAt(input, "i + " + rk + " * " + std::to_string(inner)));
    if (failed)
      return true;
  }
  for (const std::string &xk : xs)
    line("acc = acc + static_cast<double>(" + xk + ");");
  close();
  open("for (; r < " + bound + "; r += warps)");
  x = valueAt(input, "i + r * " + std::to_string(inner));
  if (failed)
    return true;
  line("acc = acc + static_cast<double>(" + x + ");");
  close();
  close();
  line("part[w][lane] = acc;");
  line("__syncthreads();");
  open("if (w == 0 && i < end)");
  line("double total = 0.0;");
  line("for (int k = 0; k < warps; ++k) total = total + part[k][lane];");
  if (slices > 1) {
    open("if (slices > 1)");
    line("sums[int64_t(blockIdx.y) * " + columns + " + (i - begin)] = total;");
    line("__threadfence();");
    reopen("else");
    line("out[i] = " + resultOf("total") + ";");
    close();
  } else {
    line("out[i] = " + resultOf("total") + ";");
  }
  close();
  if (slices > 1) {
    open("if (slices > 1)");
    line("unsigned *arrival = reinterpret_cast<unsigned *>(sums + " + sums +
         ") + (i0 - begin) / 32;");
    line("__syncthreads();");
    line("if (threadIdx.x == 0) last = atomicAdd(arrival, 1u) == "
         "unsigned(slices - 1);");
    line("__syncthreads();");
    open("if (last && w == 0)");
    open("if (i < end)");
    line("const volatile double *slot = sums + (i - begin);");
    line("double total = 0.0;");
    line("for (int64_t s = 0; s < slices; ++s) total = total + slot[s * " +
         columns + "];");
    line("out[i] = " + resultOf("total") + ";");
    close();
    line("if (lane == 0) *arrival = 0u;");
    close();
    close();
  }
  line("__syncthreads();");
  close();
  line("return;");
  close();
  os << "#endif\n";
  next = 0;
  return true;
}

LaunchShape columnLaunchShape(const ColumnReduction &cr) {
  if (cr.count < kBlockReduceRows)
    return {};
  const int64_t slices = rowSlices(cr);
  const int64_t tiles = llvm::divideCeil(cr.inner, kBlockReduceColumns);
  // [slice][column] doubles, then a 4-byte counter per tile.
  const int64_t workspace =
      slices > 1 ? slices * tiles * kBlockReduceColumns * 8 + tiles * 4 : 0;
  return {kBlockReduceColumns, kBlockReduceThreads, slices, workspace};
}

} // namespace tcc::codegen::detail
