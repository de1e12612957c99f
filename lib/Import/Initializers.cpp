// Which ONNX initializers are trainable parameters.
//
// The rule: a float initializer becomes a `tcc.param` (named after it) unless
// every one of its uses is a *data* slot, i.e. an input no gradient flows
// through: Reshape/Expand/Tile shapes, Slice bounds, Squeeze/Unsqueeze/Split/
// Reduce* axes, Gather indices, Where's condition, Dropout's ratio and
// training_mode, a loss's labels and class weights, any input of a comparison, logical op, Shape, Size,
// ConstantOfShape or Range, and a Cast to a non-float type. Such initializers,
// and all integer and bool ones, become constants that the importer folds.
// A use whose outputs are themselves only read as data, through any chain of
// ops, is a data use too: nanoGPT's mask buffer, sliced and compared with 0,
// is a constant, not a parameter. Unused float initializers stay parameters,
// so the names in a checkpoint match the model. A BatchNormalization's
// running mean and variance are parameters whatever their uses.
//
// An Identity of a parameter whose output has a parameter's name is an
// eval-mode export's merged copy (see planInitializers) and is untied into a
// parameter of its own, initialised with the same value.
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
  // Labels and class weights: PyTorch gives a loss's weight no gradient.
  if (op == "SoftmaxCrossEntropyLoss" || op == "NegativeLogLikelihoodLoss")
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

/// Whether values are only ever read as data: through any chain of ops
/// (Slice of a mask buffer, then Equal; Unsqueeze, then Cast to bool), every
/// path from the value ends in a data slot, so no gradient can reach it. A
/// graph output, or a value nothing reads, is not data: the first may be the
/// loss, the second keeps an unused weight a parameter.
class DataUses {
public:
  DataUses(const Uses &uses, const llvm::StringSet<> &outputs)
      : uses(uses), outputs(outputs) {}

  bool onlyData(const std::string &name) {
    if (auto it = memo.find(name); it != memo.end())
      return it->second;
    memo[name] = false; // a cycle (an invalid graph) is not data
    bool data = !outputs.contains(name) && uses.count(name);
    if (data)
      for (auto [node, slot] : uses.at(name)) {
        if (isDataSlot(*node, slot))
          continue;
        for (const std::string &out : node->output())
          if (!out.empty() && !onlyData(out)) {
            data = false;
            break;
          }
        if (!data)
          break;
      }
    memo[name] = data;
    return data;
  }

private:
  const Uses &uses;
  const llvm::StringSet<> &outputs;
  std::unordered_map<std::string, bool> memo;
};

/// True for a value name PyTorch gives a parameter or buffer (`h.0.ln.weight`),
/// not one it gives a node's output (`/h.0/attn/Mul_output_0`, `onnx::Mul_12`,
/// `123`).
static bool isParameterName(llvm::StringRef name) {
  return !name.empty() && !name.starts_with("/") &&
         !name.starts_with("onnx::") &&
         name.find_first_not_of("0123456789") != llvm::StringRef::npos;
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

InitializerPlan planInitializers(const onnx::GraphProto &graph,
                                 const llvm::StringMap<std::string> &torchKinds) {
  Uses uses;
  for (const onnx::NodeProto &node : graph.node())
    for (int i = 0; i < node.input_size(); ++i)
      if (!node.input(i).empty())
        uses[node.input(i)].push_back({&node, i});
  llvm::StringSet<> outputs;
  for (const onnx::ValueInfoProto &o : graph.output())
    outputs.insert(o.name());

  InitializerPlan plan;
  DataUses data(uses, outputs);
  // torch.export's record, where the dynamo-based exporter left one, says
  // which initializers are buffers (masks, position ids, rotary tables):
  // never trained, however the graph uses them.
  // A batch norm's running statistics are buffers too, but state that the
  // training step updates, so they are parameters (never trained: see
  // tcc-build-train-step).
  llvm::StringSet<> batchStats;
  for (const onnx::NodeProto &node : graph.node())
    if (node.op_type() == "BatchNormalization")
      for (int i : {3, 4})
        if (i < node.input_size())
          batchStats.insert(node.input(i));
  for (const TP &t : graph.initializer()) {
    auto kind = torchKinds.find(t.name());
    bool buffer = kind != torchKinds.end() && kind->second != "PARAMETER";
    plan.isParam[t.name()] =
        isFloatType(t.data_type()) &&
        (batchStats.contains(t.name()) || (!buffer && !data.onlyData(t.name())));
  }

  // PyTorch's exporter in eval mode merges initializers of equal value: a
  // fresh LayerNorm's weight in every layer becomes an Identity of the first
  // one. Truly tied weights (a tied lm_head) are one initializer read twice,
  // never an Identity, so each such copy is its own parameter again.
  for (const onnx::NodeProto &node : graph.node()) {
    if (node.op_type() != "Identity" || node.input_size() != 1 ||
        node.output_size() != 1 || !plan.isParam.lookup(node.input(0)) ||
        plan.isParam.count(node.output(0)) ||
        !isParameterName(node.output(0)) || data.onlyData(node.output(0)))
      continue;
    plan.untied.push_back({node.output(0), node.input(0)});
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
