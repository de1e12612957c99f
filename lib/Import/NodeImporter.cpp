// The helpers every converter uses: input access with lazy constant
// materialisation, attributes, outputs, and one-line errors.
#include "Importer.h"

#include "ConstFold.h"

#include "tcc/Import/OnnxTensor.h"
#include "tcc/TccShapes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;

namespace tcc::onnx_import {

static std::string typeStr(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return s;
}

InFlightDiagnostic GraphState::emitError(ImportFailure kind) {
  failure = kind;
  InFlightDiagnostic diag = mlir::emitError(loc);
  if (upgradedFrom)
    diag << "opset " << upgradedFrom << ", upgraded to " << opset
         << " by ONNX's version converter: ";
  return diag;
}

LogicalResult GraphState::fail(ImportFailure kind, const llvm::Twine &message) {
  return emitError(kind) << printable(message.str());
}

HeldError::HeldError(MLIRContext &context) {
  handler.emplace(&context, [this](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error && first.empty())
      first = diag.str();
    return success();
  });
}

std::string HeldError::release() {
  handler.reset();
  return first;
}

std::string describeNode(const onnx::NodeProto &node, int index) {
  std::string who = node.name().empty() ? "node #" + std::to_string(index)
                                        : "node '" + node.name() + "'";
  std::string op = node.domain().empty() || node.domain() == "ai.onnx"
                       ? node.op_type()
                       : node.domain() + "::" + node.op_type();
  return who + " (op '" + op + "')";
}

NodeImporter::NodeImporter(GraphState &graph, const onnx::NodeProto &node,
                           int index)
    : graph_(graph), node_(node), index_(index),
      loc_(NameLoc::get(StringAttr::get(
          &graph.context, node.name().empty()
                              ? node.op_type() + "#" + std::to_string(index)
                              : node.name()))) {}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

LogicalResult NodeImporter::fail(const llvm::Twine &message) {
  return graph_.fail(ImportFailure::Invalid,
                     describeNode(node_, index_) + ": " + message);
}

InFlightDiagnostic NodeImporter::emitError() {
  return graph_.emitError(ImportFailure::Invalid)
         << printable(describeNode(node_, index_)) << ": ";
}

LogicalResult NodeImporter::unsupported(const llvm::Twine &message) {
  return graph_.fail(ImportFailure::Unsupported,
                     describeNode(node_, index_) + ": " + message);
}

LogicalResult NodeImporter::notConstant(int i, llvm::StringRef what) {
  return fail("the " + what + " ('" + node_.input(i) +
              "') is only known at run time; tcc needs it at import time");
}

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

LogicalResult NodeImporter::expectInputs(int min, int max) {
  int present = 0;
  for (int i = 0; i < node_.input_size(); ++i)
    if (!node_.input(i).empty())
      present = i + 1;
  if (present < min || present > max)
    return fail("expects " +
                (min == max
                     ? std::to_string(min)
                     : std::to_string(min) + " to " + std::to_string(max)) +
                " inputs, got " + std::to_string(present));
  for (int i = 0; i < min; ++i)
    if (node_.input(i).empty())
      return fail("input " + std::to_string(i) + " is required");
  return success();
}

bool NodeImporter::hasInput(int i) const {
  return i < node_.input_size() && !node_.input(i).empty();
}

Value NodeImporter::input(int i) {
  ValueInfo &info = graph_.values.at(node_.input(i));
  if (!info.value)
    info.value = constant(info.constant);
  return info.value;
}

RankedTensorType NodeImporter::inputType(int i) {
  const ValueInfo &info = graph_.values.at(node_.input(i));
  return llvm::cast<RankedTensorType>(info.value ? info.value.getType()
                                                 : info.constant.getType());
}

DenseElementsAttr NodeImporter::constantInput(int i) {
  if (!hasInput(i))
    return nullptr;
  return graph_.values.at(node_.input(i)).constant;
}

bool NodeImporter::allInputsConstant() {
  for (int i = 0; i < node_.input_size(); ++i)
    if (hasInput(i) && !constantInput(i))
      return false;
  return true;
}

FailureOr<llvm::SmallVector<int64_t>>
NodeImporter::intsInput(int i, llvm::StringRef what) {
  DenseElementsAttr c = constantInput(i);
  if (!c)
    return notConstant(i, what);
  if (!llvm::isa<IntegerType>(c.getElementType()))
    return fail("the " + what + " must be an integer tensor, got " +
                typeStr(c.getType()));
  return intValues(c);
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

const onnx::AttributeProto *NodeImporter::attr(llvm::StringRef name) const {
  for (const onnx::AttributeProto &a : node_.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t NodeImporter::intAttr(llvm::StringRef name, int64_t dflt) const {
  const onnx::AttributeProto *a = attr(name);
  return a && a->has_i() ? a->i() : dflt;
}

double NodeImporter::floatAttr(llvm::StringRef name, double dflt) const {
  const onnx::AttributeProto *a = attr(name);
  return a && a->has_f() ? a->f() : dflt;
}

std::optional<llvm::SmallVector<int64_t>>
NodeImporter::intsAttr(llvm::StringRef name) const {
  const onnx::AttributeProto *a = attr(name);
  if (!a)
    return std::nullopt;
  return llvm::SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

LogicalResult
NodeImporter::expectAttrs(std::initializer_list<llvm::StringRef> known) {
  for (const onnx::AttributeProto &a : node_.attribute())
    if (!llvm::is_contained(known, a.name()))
      return unsupported("attribute '" + a.name() + "' is not supported");
  return success();
}

//===----------------------------------------------------------------------===//
// Outputs
//===----------------------------------------------------------------------===//

bool NodeImporter::outputUsed(int i) const {
  return i < node_.output_size() && !node_.output(i).empty() &&
         graph_.used.contains(node_.output(i));
}

/// ONNX shape inference and the tcc ops must agree; a disagreement is an
/// importer bug or an inconsistent model, and either is better caught here.
static LogicalResult checkInferred(NodeImporter &node, GraphState &graph,
                                   const std::string &name, Type type) {
  auto it = graph.inferred.find(name);
  if (it == graph.inferred.end() || it->second == type)
    return success();
  return node.fail("output '" + name + "' has type " + typeStr(type) +
                   " but ONNX shape inference says " + typeStr(it->second));
}

LogicalResult NodeImporter::setOutput(int i, Value value) {
  if (i >= node_.output_size() || node_.output(i).empty())
    return success();
  const std::string &name = node_.output(i);
  graph_.values[name] = ValueInfo{value, nullptr};
  return checkInferred(*this, graph_, name, value.getType());
}

LogicalResult NodeImporter::setConstant(int i, DenseElementsAttr value) {
  if (i >= node_.output_size() || node_.output(i).empty())
    return success();
  const std::string &name = node_.output(i);
  graph_.values[name] = ValueInfo{nullptr, value};
  return checkInferred(*this, graph_, name, value.getType());
}

std::string shapeStr(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

void NodeImporter::setSequence(int i, std::vector<ValueInfo> elements) {
  if (i < node_.output_size() && !node_.output(i).empty())
    graph_.sequences[node_.output(i)] = std::move(elements);
}

FailureOr<const std::vector<ValueInfo> *> NodeImporter::sequenceInput(int i) {
  auto it = hasInput(i) ? graph_.sequences.find(node_.input(i))
                        : graph_.sequences.end();
  if (it == graph_.sequences.end())
    return fail("input " + std::to_string(i) + " is not a sequence");
  return &it->second;
}

LogicalResult NodeImporter::setValueInfo(int i, const ValueInfo &info) {
  return info.value ? setOutput(i, info.value) : setConstant(i, info.constant);
}

//===----------------------------------------------------------------------===//
// Building
//===----------------------------------------------------------------------===//

FailureOr<Operation *> NodeImporter::createInferred(OperationState &state,
                                                    InferFn infer) {
  // Checked before the op is kept: what the op says is this node's error.
  HeldError held(*context());
  llvm::SmallVector<Type> types;
  if (failed(infer(context(), loc_, state.operands,
                   state.attributes.getDictionary(context()),
                   state.getRawProperties(), state.regions, types))) {
    std::string why = held.release();
    return fail(why.empty() ? "invalid operands" : why);
  }
  state.addTypes(types);
  Operation *op = builder().create(state);
  // ONNX's type constraints are wider than some tcc ops' (and its checker
  // does not check types), so the op's own constraints decide.
  if (failed(verify(op, /*verifyRecursively=*/false))) {
    op->erase();
    return unsupported(held.release());
  }
  return op;
}

Value NodeImporter::constant(DenseElementsAttr value) {
  return tcc::ConstantOp::create(builder(), loc_, value);
}

Value NodeImporter::scalar(Type elementType, double value) {
  return constant(splatOf(RankedTensorType::get({}, elementType), value));
}

FailureOr<Value> NodeImporter::reshape(Value value,
                                       llvm::ArrayRef<int64_t> shape) {
  auto type = llvm::cast<RankedTensorType>(value.getType());
  if (type.getShape() == shape)
    return value;
  if (type.getNumElements() != numElements(shape))
    return fail("cannot reshape " + typeStr(type) + " to " +
                std::to_string(numElements(shape)) + " elements");
  return tcc::ReshapeOp::create(builder(), loc_, type.clone(shape), value)
      .getResult();
}

Value NodeImporter::cast(Value value, Type elementType) {
  auto type = llvm::cast<RankedTensorType>(value.getType());
  if (type.getElementType() == elementType)
    return value;
  return tcc::CastOp::create(builder(), loc_, type.clone(elementType), value);
}

FailureOr<Value> NodeImporter::broadcast(Value value,
                                         llvm::ArrayRef<int64_t> shape) {
  auto type = llvm::cast<RankedTensorType>(value.getType());
  if (type.getShape() == shape)
    return value;
  if (!isBroadcastableTo(type.getShape(), shape))
    return fail("cannot broadcast " + typeStr(type) + " to shape " +
                typeStr(type.clone(shape)));
  return tcc::BroadcastOp::create(builder(), loc_, type.clone(shape), value)
      .getResult();
}

FailureOr<int64_t> NodeImporter::normalizeAxis(int64_t axis, int64_t rank,
                                               llvm::StringRef what) {
  if (axis < -rank || axis >= rank)
    return fail(what + " " + std::to_string(axis) +
                " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

FailureOr<llvm::SmallVector<int64_t>>
NodeImporter::normalizeAxes(std::optional<llvm::ArrayRef<int64_t>> given,
                            int64_t rank, llvm::StringRef what) {
  llvm::SmallVector<int64_t> axes;
  if (!given) {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
    return axes;
  }
  for (int64_t axis : *given) {
    FailureOr<int64_t> d = normalizeAxis(axis, rank, what);
    if (failed(d))
      return failure();
    axes.push_back(*d);
  }
  return axes;
}

FailureOr<Type> NodeImporter::elementType(int64_t onnxType) {
  if (Type t = onnxElementType(*context(), int32_t(onnxType)))
    return t;
  return unsupported("unsupported dtype " + onnxDTypeName(int32_t(onnxType)));
}

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

const ConverterTable &converterTable() {
  static const ConverterTable table = [] {
    ConverterTable t;
    registerConstantConverters(t);
    registerElementwiseConverters(t);
    registerActivationConverters(t);
    registerEinsumConverter(t);
    registerRecurrentConverters(t);
    registerShapeConverters(t);
    registerSliceGatherConverters(t);
    registerReduceConverters(t);
    registerNnConverters(t);
    registerLossConverters(t);
    registerSequenceConverters(t);
    registerConstOnlyConverters(t);
    registerAttentionConverters(t);
    registerVisionConverters(t);
    registerResizeConverter(t);
    return t;
  }();
  return table;
}

} // namespace tcc::onnx_import
