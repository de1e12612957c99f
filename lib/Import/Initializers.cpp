// Which ONNX initializers are trainable parameters.
//
// The rule: a float initializer becomes a `tcc.param` (named after it) unless
// every one of its uses is a *data* slot, i.e. an input no gradient flows
// through: Reshape/Expand/Tile shapes, Slice bounds, Squeeze/Unsqueeze/Split/
// Reduce* axes, Gather indices, Where's condition, Dropout's ratio and
// training_mode, any input of a comparison, logical op, Shape, Size,
// ConstantOfShape or Range, and a Cast to a non-float type. Such initializers,
// and all integer and bool ones, become constants that the importer folds.
// Uses through Identity count as uses of the initializer itself. Unused float
// initializers stay parameters, so the names in a checkpoint match the model.
//
// PyTorch's constant folding (do_constant_folding=True) stores a weight used
// as `x @ W.T` as a second, anonymous initializer "onnx::MatMul_N" = W^T. For a
// tied weight that would split one parameter in two, so an anonymous 2-D
// initializer equal to the transpose of a named parameter is read as
// Transpose(param) instead. Constant-valued matrices are never matched: two
// zero-initialised weights are equal by value without being the same tensor.
#include "Importer.h"

#include "tcc/Import/OnnxTensor.h"

#include "llvm/ADT/StringRef.h"

#include <cstring>

namespace tcc::onnx_import {

using TP = onnx::TensorProto;

static bool isFloatType(int32_t t) {
  return t == TP::FLOAT || t == TP::DOUBLE || t == TP::FLOAT16 ||
         t == TP::BFLOAT16;
}

/// True when input `slot` of `node` is read as data (see the file comment).
static bool isDataSlot(const onnx::NodeProto &node, int slot) {
  llvm::StringRef op = node.op_type();
  if (llvm::is_contained({"Equal", "Less", "Greater", "LessOrEqual",
                          "GreaterOrEqual", "Not", "And", "Or", "Xor", "Shape",
                          "Size", "ConstantOfShape", "Range"},
                         op))
    return true;
  if (op == "Cast") {
    for (const onnx::AttributeProto &a : node.attribute())
      if (a.name() == "to")
        return !isFloatType(int32_t(a.i()));
    return false;
  }
  if (op == "Slice")
    return slot >= 1;
  if (op == "Where")
    return slot == 0;
  if (op == "Dropout")
    return slot >= 1;
  if (op.starts_with("Reduce"))
    return slot == 1;
  return slot == 1 &&
         llvm::is_contained({"Reshape", "Expand", "Tile", "Squeeze",
                             "Unsqueeze", "Split", "Gather"},
                            op);
}

using Uses =
    std::unordered_map<std::string,
                       std::vector<std::pair<const onnx::NodeProto *, int>>>;

/// True when `name` (directly or through Identity) is only read as data.
static bool onlyDataUses(const Uses &uses, const std::string &name,
                         int depth = 0) {
  auto it = uses.find(name);
  if (it == uses.end())
    return true;
  for (auto [node, slot] : it->second) {
    if (node->op_type() == "Identity" && node->output_size() == 1 &&
        depth < 16) {
      if (!onlyDataUses(uses, node->output(0), depth + 1))
        return false;
      continue;
    }
    if (!isDataSlot(*node, slot))
      return false;
  }
  return true;
}

/// A matrix initializer's elements without a copy where the proto holds
/// them as raw_data (always, for PyTorch's exports): weights are compared
/// here before they become blobs, and a decoded copy of each candidate
/// would double the memory a large model takes.
struct MatrixView {
  int64_t rows = 0, cols = 0;
  size_t elementSize = 0;
  const uint8_t *data = nullptr;
  data::Array decoded; ///< holds the elements when raw_data does not

  bool load(const TP &t) {
    std::optional<data::DType> dtype = onnxToDType(t.data_type());
    if (!dtype || t.dims_size() != 2)
      return false;
    rows = t.dims(0);
    cols = t.dims(1);
    elementSize = data::dtypeSize(*dtype);
    if (rows < 0 || cols < 0 || (rows > 0 && cols > (int64_t(1) << 40) / rows))
      return false;
    if (t.has_raw_data() &&
        t.raw_data().size() == size_t(rows * cols) * elementSize) {
      data = reinterpret_cast<const uint8_t *>(t.raw_data().data());
      return true;
    }
    // A tensor that does not decode is no tied weight; its error is
    // reported where it is imported.
    mlir::FailureOr<data::Array> array =
        tensorProtoToArray(t, [] { return mlir::InFlightDiagnostic(); });
    if (mlir::failed(array))
      return false;
    decoded = std::move(*array);
    data = decoded.bytes.data();
    return true;
  }
  const uint8_t *at(int64_t i, int64_t j) const {
    return data + (i * cols + j) * elementSize;
  }
};

/// True when `a` equals `b` transposed and is not constant-valued (the
/// caller has matched dtypes and transposed shapes).
static bool isTransposeOf(const MatrixView &a, const MatrixView &b) {
  bool varies = false;
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t j = 0; j < a.cols; ++j) {
      const uint8_t *x = a.at(i, j);
      if (std::memcmp(x, b.at(j, i), a.elementSize) != 0)
        return false;
      varies |= std::memcmp(x, a.data, a.elementSize) != 0;
    }
  return varies;
}

InitializerPlan planInitializers(const onnx::GraphProto &graph) {
  Uses uses;
  for (const onnx::NodeProto &node : graph.node())
    for (int i = 0; i < node.input_size(); ++i)
      if (!node.input(i).empty())
        uses[node.input(i)].push_back({&node, i});
  llvm::StringSet<> outputs;
  for (const onnx::ValueInfoProto &o : graph.output())
    outputs.insert(o.name());

  InitializerPlan plan;
  for (const TP &t : graph.initializer()) {
    bool unused = !uses.count(t.name()) && !outputs.contains(t.name());
    plan.isParam[t.name()] =
        isFloatType(t.data_type()) && (unused || !onlyDataUses(uses, t.name()));
  }

  // Only anonymous matrices are candidates, and only named parameters of
  // the transposed shape are compared, so this costs nothing for models
  // exported without constant folding.
  for (const TP &anon : graph.initializer()) {
    if (!llvm::StringRef(anon.name()).starts_with("onnx::") ||
        !plan.isParam[anon.name()] || anon.dims_size() != 2)
      continue;
    MatrixView a;
    bool loaded = false;
    for (const TP &named : graph.initializer()) {
      if (llvm::StringRef(named.name()).starts_with("onnx::") ||
          !plan.isParam[named.name()] ||
          named.data_type() != anon.data_type() || named.dims_size() != 2 ||
          named.dims(0) != anon.dims(1) || named.dims(1) != anon.dims(0))
        continue;
      if (!loaded && !(loaded = a.load(anon)))
        break;
      MatrixView b;
      if (b.load(named) && isTransposeOf(a, b)) {
        plan.transposeOf[anon.name()] = named.name();
        plan.isParam[anon.name()] = false;
        break;
      }
    }
  }
  return plan;
}

} // namespace tcc::onnx_import
