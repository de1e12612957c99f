// Kernel source for exec.fusion, the indexing half (KernelWriter.h): layout
// ops (transpose, slice, concat, gather and their gradients) read their
// operand at the index their semantics give, a reduction loops over the
// elements it reduces (column reductions: ColumnReduction.cpp).
#include "KernelWriter.h"

#include "tcc/Codegen/KernelEmitter.h"

#include "IndexExpr.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace tcc::codegen::detail {

std::string KernelWriter::transposeAt(TransposeOp op, StringRef idx) {
  SmallVector<int64_t> inStrides = rowMajorStrides(shapeOf(op.getInput()));
  SmallVector<int64_t> strides;
  for (int64_t p : op.getPerm())
    strides.push_back(inStrides[p]);
  return valueAt(op.getInput(),
                 stridedIndexExpr(shapeOf(op.getResult()), strides, 0, idx));
}

std::string KernelWriter::sliceAt(SliceOp op, StringRef idx) {
  SmallVector<int64_t> inStrides = rowMajorStrides(shapeOf(op.getInput()));
  SmallVector<int64_t> strides;
  int64_t base = 0;
  for (size_t d = 0; d < inStrides.size(); ++d) {
    // A negative stride walks down from `start`.
    base += op.getStarts()[d] * inStrides[d];
    strides.push_back(op.getStrides()[d] * inStrides[d]);
  }
  return valueAt(op.getInput(),
                 stridedIndexExpr(shapeOf(op.getResult()), strides, base, idx));
}

std::string KernelWriter::sliceGradAt(SliceGradOp op, StringRef idx) {
  // Zero unless, in every dim, the coordinate is start + k * stride with k
  // below the gradient's size; then the gradient's element at the k's.
  ArrayRef<int64_t> out = shapeOf(op.getResult());
  ArrayRef<int64_t> grad = shapeOf(op.getResultGrad());
  SmallVector<int64_t> gradStrides = rowMajorStrides(grad);
  std::string type = ctype(op.getResult());
  std::string name = fresh("v");
  line(type + " " + name + " = " + type + "(0);");
  open("");
  SmallVector<std::string> conditions;
  std::string gradIndex;
  for (size_t d = 0; d < out.size(); ++d) {
    int64_t start = op.getStarts()[d], stride = op.getStrides()[d];
    if (grad[d] == 1 && out[d] == 1)
      continue; // both coordinates are 0 (start is 0 then)
    std::string k;
    if (start == 0 && stride == 1 && grad[d] == out[d]) {
      k = coordExpr(out, d, idx); // the whole dim
    } else {
      std::string t = fresh("t");
      line("const int64_t " + t + " = " + coordExpr(out, d, idx) + " - " +
           std::to_string(start) + ";");
      if (stride == 1) {
        k = t;
        conditions.push_back(t + " >= 0 && " + t + " < " +
                             std::to_string(grad[d]));
      } else {
        k = t + " / " + std::to_string(stride);
        conditions.push_back(t + " % " + std::to_string(stride) + " == 0 && " +
                             k + " >= 0 && " + k + " < " +
                             std::to_string(grad[d]));
      }
    }
    std::string term = gradStrides[d] == 1
                           ? "(" + k + ")"
                           : "(" + k + ") * " + std::to_string(gradStrides[d]);
    gradIndex = gradIndex.empty() ? term : gradIndex + " + " + term;
  }
  std::string cond = conditions.empty() ? "true" : conditions[0];
  for (size_t c = 1; c < conditions.size(); ++c)
    cond += " && " + conditions[c];
  open("if (" + cond + ")");
  std::string value =
      valueAt(op.getResultGrad(), gradIndex.empty() ? "0" : gradIndex);
  line(name + " = " + value + ";");
  close();
  close();
  return name;
}

std::string KernelWriter::concatAt(ConcatOp op, StringRef idx) {
  ArrayRef<int64_t> out = shapeOf(op.getResult());
  int64_t axis = op.getAxis();
  int64_t inner = product(out.drop_front(axis + 1));
  int64_t outer = product(out.take_front(axis));
  std::string type = ctype(op.getResult());
  std::string name = fresh("v");
  line(type + " " + name + " = " + type + "(0);");
  open("");
  std::string c = fresh("c");
  line("const int64_t " + c + " = " + coordExpr(out, axis, idx) + ";");
  std::string o = outer == 1 ? "0" : fresh("o");
  if (outer != 1)
    line("const int64_t " + o + " = " + idx.str() + " / " +
         std::to_string(out[axis] * inner) + ";");
  std::string e = inner == 1 ? "" : " + " + idx.str() + " % " + std::to_string(inner);
  SmallVector<std::pair<Value, int64_t>> pieces; // non-empty inputs, offsets
  int64_t offset = 0;
  for (Value input : op.getInputs()) {
    if (product(shapeOf(input)) != 0)
      pieces.push_back({input, offset});
    offset += shapeOf(input)[axis];
  }
  for (auto [k, piece] : llvm::enumerate(pieces)) {
    auto [input, start] = piece;
    int64_t size = shapeOf(input)[axis];
    std::string cond = "if (" + c + " < " + std::to_string(start + size) + ")";
    if (pieces.size() == 1)
      open("");
    else if (k == 0)
      open(cond);
    else
      reopen(k + 1 < pieces.size() ? "else " + cond : "else");
    std::string index;
    if (outer != 1)
      index = o + " * " + std::to_string(size * inner) + " + ";
    std::string col =
        start == 0 ? c : "(" + c + " - " + std::to_string(start) + ")";
    index += inner == 1 ? col : col + " * " + std::to_string(inner);
    index += e;
    std::string value = valueAt(input, index);
    line(name + " = " + value + ";");
  }
  if (!pieces.empty())
    close();
  close();
  return name;
}

std::string KernelWriter::gatherAt(GatherOp op, StringRef idx) {
  ArrayRef<int64_t> data = shapeOf(op.getData());
  int64_t axis = op.getAxis(), dim = data[axis];
  int64_t inner = product(data.drop_front(axis + 1));
  int64_t count = product(shapeOf(op.getIndices()));
  std::string type = ctype(op.getResult());
  std::string name = fresh("v");
  // An index outside [-dim, dim) reads 0 (the interpreter reports it).
  line(type + " " + name + " = " + type + "(0);");
  open("");
  std::string j = count == 1 ? "0" : fresh("g");
  if (count != 1)
    line("const int64_t " + j + " = " +
         (inner == 1 ? idx.str() : idx.str() + " / " + std::to_string(inner)) +
         " % " + std::to_string(count) + ";");
  std::string index = fresh("k");
  line("int64_t " + index + " = int64_t(" + valueAt(op.getIndices(), j) + ");");
  line("if (" + index + " < 0) " + index + " += " + std::to_string(dim) + ";");
  open("if (" + index + " >= 0 && " + index + " < " + std::to_string(dim) + ")");
  std::string at;
  if (product(data.take_front(axis)) != 1)
    at = "(" + idx.str() + " / " + std::to_string(count * inner) + ") * " +
         std::to_string(dim * inner) + " + ";
  at += inner == 1 ? index : index + " * " + std::to_string(inner);
  if (inner != 1)
    at += " + " + idx.str() + " % " + std::to_string(inner);
  line(name + " = " + valueAt(op.getData(), at) + ";");
  close();
  close();
  return name;
}

std::string KernelWriter::gatherGradAt(GatherGradOp op, StringRef idx) {
  // Sum, in index order, of the gradient slices whose index is this
  // element's coordinate along the axis (accumulated in the element type,
  // from +0, as the interpreter's scatter-add).
  ArrayRef<int64_t> out = shapeOf(op.getResult());
  int64_t axis = op.getAxis(), dim = out[axis];
  int64_t inner = product(out.drop_front(axis + 1));
  int64_t outer = product(out.take_front(axis));
  int64_t count = product(shapeOf(op.getIndices()));
  std::string type = ctype(op.getResult());
  std::string name = fresh("v");
  line(type + " " + name + " = " + type + "(0);");
  open("");
  std::string c = fresh("c");
  line("const int64_t " + c + " = " + coordExpr(out, axis, idx) + ";");
  std::string j = fresh("r");
  open("for (int64_t " + j + " = 0; " + j + " < " + std::to_string(count) +
       "; ++" + j + ")");
  std::string index = fresh("k");
  line("int64_t " + index + " = int64_t(" + valueAt(op.getIndices(), j) + ");");
  line("if (" + index + " < 0) " + index + " += " + std::to_string(dim) + ";");
  open("if (" + index + " == " + c + ")");
  std::string at;
  if (outer != 1)
    at = "(" + idx.str() + " / " + std::to_string(dim * inner) + ") * " +
         std::to_string(count * inner) + " + ";
  at += inner == 1 ? j : j + " * " + std::to_string(inner);
  if (inner != 1)
    at += " + " + idx.str() + " % " + std::to_string(inner);
  std::string g = valueAt(op.getResultGrad(), at);
  line(name + " = " + name + " + " + g + ";");
  close();
  close();
  close();
  return name;
}

std::optional<Accumulation> accumulation(Operation *op, int64_t count) {
  Type elem = elementType(op->getOperand(0));
  if (!cppType(elem) || elem.isInteger(1))
    return std::nullopt;
  Accumulation a;
  a.op = op;
  a.count = count;
  a.isFloat = llvm::isa<FloatType>(elem);
  a.sum = llvm::isa<ReduceSumOp, ReduceMeanOp>(op);
  a.isMax = llvm::isa<ReduceMaxOp>(op);
  a.type = cppType(elem)->str();
  a.accType = a.sum ? (a.isFloat ? "double" : "int64_t") : a.type;
  if (a.sum)
    a.init = a.accType + "(0)";
  else if (elem.isF32() || !halfName(elem).empty())
    a.init = a.isMax ? "tcc_k::f32_bits(0xff800000u)"
                     : "tcc_k::f32_bits(0x7f800000u)";
  else if (elem.isF64())
    a.init = a.isMax ? "tcc_k::f64_bits(0xfff0000000000000ull)"
                     : "tcc_k::f64_bits(0x7ff0000000000000ull)";
  else if (elem.isInteger(32))
    a.init = a.isMax ? "INT32_MIN" : "INT32_MAX";
  else
    a.init = a.isMax ? "INT64_MIN" : "INT64_MAX";
  return a;
}

std::string Accumulation::step(StringRef acc, StringRef x) const {
  if (sum)
    return isFloat ? acc.str() + " + static_cast<double>(" + x.str() + ")"
                   : "tcc_k::wrap_add(" + acc.str() + ", int64_t(" + x.str() +
                         "))";
  return "tcc_k::" + std::string(isFloat ? "nan_" : "int_") +
         (isMax ? "max" : "min") + "(" + acc.str() + ", " + x.str() + ")";
}

std::string Accumulation::result(StringRef acc) const {
  if (!llvm::isa<ReduceMeanOp>(op))
    return "static_cast<" + type + ">(" + acc.str() + ")";
  if (isFloat)
    return "static_cast<" + type + ">(" + acc.str() +
           " / static_cast<double>(" + std::to_string(count) + "))";
  // An integer mean truncates; an empty one is 0.
  return count == 0 ? type + "(0)"
                    : "static_cast<" + type + ">(" + acc.str() + " / int64_t(" +
                          std::to_string(count) + "))";
}

std::string KernelWriter::reduceAt(Operation *op, ArrayRef<int64_t> axes,
                                   StringRef idx) {
  // The interpreter's reduction (Accumulation): for each output element,
  // the input elements it covers in row-major order.
  Value input = op->getOperand(0);
  ArrayRef<int64_t> in = shapeOf(input);
  SmallVector<int64_t> inStrides = rowMajorStrides(in);
  SmallVector<int64_t> keptShape, keptStrides, redShape, redStrides;
  for (size_t d = 0; d < in.size(); ++d) {
    bool reduced = llvm::is_contained(axes, static_cast<int64_t>(d));
    (reduced ? redShape : keptShape).push_back(in[d]);
    (reduced ? redStrides : keptStrides).push_back(inStrides[d]);
  }
  int64_t count = product(redShape);
  std::optional<Accumulation> acc = accumulation(op, count);
  if (!acc)
    return fail(op, "unsupported element type for a reduction");

  std::string base = materialize(stridedIndexExpr(keptShape, keptStrides, 0, idx));
  std::string a = fresh("acc");
  line(acc->accType + " " + a + " = " + acc->init + ";");
  if (count != 0) { // else the empty reduction's value, with no loop
    std::string r = fresh("r");
    open("for (int64_t " + r + " = 0; " + r + " < " + std::to_string(count) +
         "; ++" + r + ")");
    std::string offset = stridedIndexExpr(redShape, redStrides, 0, r);
    std::string at = base == "0"     ? offset
                     : offset == "0" ? base
                                     : base + " + " + offset;
    std::string x = valueAt(input, at);
    line(a + " = " + acc->step(a, x) + ";");
    close();
  }
  std::string name = fresh("v");
  line("const " + acc->type + " " + name + " = " + acc->result(a) + ";");
  return name;
}

} // namespace tcc::codegen::detail
