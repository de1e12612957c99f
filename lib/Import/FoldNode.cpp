// The importer's constant folder: after a node's converter has emitted its
// tcc ops, a node whose inputs are all known at import time is evaluated by
// the reference interpreter (tcc::interp::evaluate, op by op over what the
// converter emitted) and its outputs become constants. It folds whatever the
// interpreter evaluates, so later converters that need a constant (Reshape
// shapes, Slice starts, Expand shapes) see one whatever op computed it.
//
// A node is folded only when its elements (kMaxFoldElements a value) and its
// work (kMaxFoldFlops, by tcc::opFlops) are small enough for the
// interpreter; a bigger one stays in the graph and runs with the step.
//
// Precision: the interpreter's default numerics, which its tests hold the
// runtime to: f32 elementwise math in float, sums (reductions, dot products,
// normalisation statistics) accumulated in double and rounded once to f32.
#include "ConstFold.h"
#include "Importer.h"

#include "tcc/Import/OnnxTensor.h"
#include "tcc/Interp/Interpreter.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using tcc::data::Array;

namespace tcc::onnx_import {
namespace {

/// The element types a folded constant can have (those arrayToElementsAttr
/// packs); bf16/f16 and narrow integers stay in the IR.
bool foldableType(Type type) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape() ||
      tensor.getNumElements() > kMaxFoldElements)
    return false;
  Type elem = tensor.getElementType();
  return elem.isF32() || elem.isF64() || elem.isInteger(1) ||
         elem.isInteger(32) || elem.isInteger(64);
}

/// An op the folder may run: deterministic, without side effects or
/// parameters, over values small enough to evaluate.
bool foldableOp(Operation &op) {
  if (!isMemoryEffectFree(&op) || op.getNumRegions() != 0 ||
      llvm::isa<GetParamOp>(op))
    return false;
  return llvm::all_of(op.getOperandTypes(), foldableType) &&
         llvm::all_of(op.getResultTypes(), foldableType);
}

/// Evaluates what `node` emitted (`ops`, in order) and returns the array of
/// every value in `wanted`; false when anything cannot be evaluated.
bool evaluateOps(llvm::ArrayRef<Operation *> ops, llvm::ArrayRef<Value> wanted,
                 std::vector<Array> &arrays) {
  llvm::DenseMap<Value, Array> values;
  std::string error;
  // Values from before the node: the constants its inputs materialised.
  auto arrayOf = [&](Value v) -> const Array * {
    auto it = values.find(v);
    if (it != values.end())
      return &it->second;
    auto constant = v.getDefiningOp<ConstantOp>();
    std::vector<Array> out;
    if (!constant || !foldableType(v.getType()) ||
        !interp::evaluate(constant, {}, out, error))
      return nullptr;
    return &(values[v] = std::move(out[0]));
  };
  for (Operation *op : ops) {
    std::vector<Array> operands, results;
    for (Value v : op->getOperands()) {
      const Array *a = arrayOf(v);
      if (!a)
        return false;
      operands.push_back(*a);
    }
    if (!interp::evaluate(op, operands, results, error))
      return false;
    for (auto [v, a] : llvm::zip_equal(op->getResults(), results))
      values[v] = std::move(a);
  }
  for (Value v : wanted) {
    const Array *a = arrayOf(v);
    if (!a)
      return false;
    arrays.push_back(*a);
  }
  return true;
}

} // namespace

LogicalResult foldNode(GraphState &graph, NodeImporter &n, Block &body,
                       Operation *last) {
  const onnx::NodeProto &node = n.node();
  for (int i = 0; i < n.numInputs(); ++i)
    if (n.hasInput(i) && (!graph.values.count(node.input(i)) ||
                          !graph.values.at(node.input(i)).constant))
      return success();
  // The outputs the converter left as SSA values (sequences do not fold).
  llvm::SmallVector<int> outputs;
  llvm::SmallVector<Value> wanted;
  for (int i = 0; i < n.numOutputs(); ++i) {
    const std::string &name = node.output(i);
    if (name.empty() || graph.sequences.count(name))
      continue;
    auto it = graph.values.find(name);
    if (it == graph.values.end() || it->second.constant)
      continue;
    outputs.push_back(i);
    wanted.push_back(it->second.value);
  }
  if (outputs.empty())
    return success();
  llvm::SmallVector<Operation *> ops;
  int64_t flops = 0;
  for (Operation *op = last ? last->getNextNode() : &body.front(); op;
       op = op->getNextNode()) {
    if (!foldableOp(*op))
      return success();
    flops += opFlops(op);
    if (flops > kMaxFoldFlops)
      return success();
    ops.push_back(op);
  }
  std::vector<Array> arrays;
  if (!evaluateOps(ops, wanted, arrays))
    return success();
  llvm::SmallVector<DenseElementsAttr> constants;
  for (const Array &a : arrays) {
    DenseElementsAttr c = arrayToElementsAttr(
        graph.context, a, [] { return InFlightDiagnostic(); });
    if (!c)
      return success();
    constants.push_back(c);
  }
  for (auto [i, c] : llvm::zip_equal(outputs, constants))
    if (failed(n.setConstant(i, c)))
      return failure();
  // What the converter emitted is now unread, except the constants it
  // materialised for its inputs, which those inputs' ValueInfo may hold.
  for (Operation *op : llvm::reverse(ops))
    if (op->use_empty() && !llvm::isa<ConstantOp>(op))
      op->erase();
  return success();
}

} // namespace tcc::onnx_import
