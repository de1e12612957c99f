// Internal interface of the ONNX importer: the per-graph state, the context a
// converter sees for one node, and the op_type -> converter table.
//
// Every ONNX value is either an SSA value or a constant known at import time
// (or both once a constant has been materialised). A node whose inputs are
// all known is folded after its converter by the reference interpreter
// (foldNode), which is how PyTorch's shape sub-graphs (Shape -> Gather ->
// Unsqueeze -> Concat -> Reshape, ...) disappear: they never stay in the IR,
// and ops that need a shape read it as a constant.
#ifndef TCC_LIB_IMPORT_IMPORTER_H
#define TCC_LIB_IMPORT_IMPORTER_H

#include "tcc/Import/OnnxImporter.h"
#include "tcc/TccOps.h"

#include "onnx/onnx_pb.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <optional>
#include <string>
#include <unordered_map>

namespace tcc::onnx_import {

/// What the importer knows about one ONNX value.
struct ValueInfo {
  /// The SSA value; null for a constant nobody has materialised yet.
  mlir::Value value;
  /// The value when known at import time.
  mlir::DenseElementsAttr constant;
};

/// State shared by all nodes of the graph being imported.
struct GraphState {
  GraphState(mlir::MLIRContext &context, std::string path)
      : context(context), builder(&context), path(std::move(path)),
        loc(mlir::NameLoc::get(mlir::StringAttr::get(&context, this->path))) {}

  mlir::MLIRContext &context;
  mlir::OpBuilder builder;
  std::string path;
  /// The model file: the module's location and that of every import error.
  /// A node is named in the message as ONNX knows it (name or index, and op
  /// type), which an unnamed node's location ("Op#12") cannot say.
  mlir::Location loc;
  /// Why the import failed, once it has.
  ImportFailure failure = ImportFailure::Invalid;
  int64_t opset = 0;
  /// The model's own opset when ONNX's version converter upgraded it (0
  /// otherwise); errors then say so, since they describe the upgraded nodes.
  int64_t upgradedFrom = 0;
  std::unordered_map<std::string, ValueInfo> values;
  /// ONNX sequence values (SplitToSequence's output), element by element;
  /// they exist only at import time (see Sequence.cpp).
  std::unordered_map<std::string, std::vector<ValueInfo>> sequences;
  /// Names read by some node or listed as graph outputs: outputs that are not
  /// in here may be left undefined (e.g. Dropout's mask, LayerNorm's mean).
  llvm::StringSet<> used;
  /// ONNX shape inference's result types, where it knew a static shape.
  std::unordered_map<std::string, mlir::RankedTensorType> inferred;

  /// Starts the error of a failure of `kind` at the model's location.
  mlir::InFlightDiagnostic emitError(ImportFailure kind);
  /// Reports `message` (made printable: names come from the file) as the
  /// error of a failure of `kind`; always returns failure.
  mlir::LogicalResult fail(ImportFailure kind, const llvm::Twine &message);
};

/// The view of one node that a converter works with. Errors name the file,
/// the node (or its index when unnamed) and the op type.
class NodeImporter {
public:
  NodeImporter(GraphState &graph, const onnx::NodeProto &node, int index);

  const onnx::NodeProto &node() const { return node_; }
  int index() const { return index_; }
  int64_t opset() const { return graph_.opset; }
  mlir::OpBuilder &builder() { return graph_.builder; }
  mlir::MLIRContext *context() { return &graph_.context; }
  mlir::Location loc() const { return loc_; }

  //===--- Inputs ---------------------------------------------------------===//

  /// Checks the number of inputs present (optional trailing ones count).
  mlir::LogicalResult expectInputs(int min, int max);
  int numInputs() const { return node_.input_size(); }
  /// True when input `i` exists and is not the empty "omitted" name.
  bool hasInput(int i) const;
  /// The SSA value of input `i`, materialising a known constant on demand.
  mlir::Value input(int i);
  mlir::RankedTensorType inputType(int i);
  llvm::ArrayRef<int64_t> inputShape(int i) { return inputType(i).getShape(); }
  mlir::Type inputElementType(int i) { return inputType(i).getElementType(); }
  /// The import-time value of input `i`, or null.
  mlir::DenseElementsAttr constantInput(int i);
  bool allInputsConstant();
  /// Integer contents of input `i`, which must be known at import time:
  /// otherwise fails with "... is only known at run time" (notConstant).
  mlir::FailureOr<llvm::SmallVector<int64_t>> intsInput(int i,
                                                        llvm::StringRef what);

  //===--- Attributes -----------------------------------------------------===//

  const onnx::AttributeProto *attr(llvm::StringRef name) const;
  int64_t intAttr(llvm::StringRef name, int64_t dflt) const;
  double floatAttr(llvm::StringRef name, double dflt) const;
  std::optional<llvm::SmallVector<int64_t>>
  intsAttr(llvm::StringRef name) const;
  /// Fails (Unsupported) on attributes outside `known`, so that an attribute
  /// that would change the semantics is never silently ignored.
  mlir::LogicalResult expectAttrs(std::initializer_list<llvm::StringRef> known);

  //===--- Outputs --------------------------------------------------------===//

  int numOutputs() const { return node_.output_size(); }
  /// True when output `i` exists and something reads it.
  bool outputUsed(int i) const;
  mlir::LogicalResult setOutput(int i, mlir::Value value);
  mlir::LogicalResult setConstant(int i, mlir::DenseElementsAttr value);
  /// Output `i` as a sequence of `elements` (import-time only).
  void setSequence(int i, std::vector<ValueInfo> elements);
  /// The elements of sequence input `i`; fails when it is not a sequence.
  mlir::FailureOr<const std::vector<ValueInfo> *> sequenceInput(int i);
  /// Output `i` as `info` (a tensor value or a known constant).
  mlir::LogicalResult setValueInfo(int i, const ValueInfo &info);

  //===--- Building -------------------------------------------------------===//

  /// Creates an op whose result types the op infers. An inference failure
  /// (shapes) or an operand the op does not accept (element types) is
  /// reported as this node's error instead of aborting.
  template <typename OpT, typename... Args>
  mlir::FailureOr<OpT> create(Args &&...args) {
    mlir::OperationState state(loc_, OpT::getOperationName());
    OpT::build(builder(), state, mlir::TypeRange(),
               std::forward<Args>(args)...);
    mlir::FailureOr<mlir::Operation *> op =
        createInferred(state, &OpT::inferReturnTypes);
    if (mlir::failed(op))
      return mlir::failure();
    return llvm::cast<OpT>(*op);
  }

  /// Materialises `value` as a tcc.constant.
  mlir::Value constant(mlir::DenseElementsAttr value);
  /// A scalar (rank-0) constant of `elementType`.
  mlir::Value scalar(mlir::Type elementType, double value);
  /// tcc.reshape to `shape`, or `value` itself when the shape is unchanged.
  mlir::FailureOr<mlir::Value> reshape(mlir::Value value,
                                       llvm::ArrayRef<int64_t> shape);
  /// tcc.cast to `elementType`, or `value` itself when it already has it.
  mlir::Value cast(mlir::Value value, mlir::Type elementType);
  /// tcc.broadcast to `shape`, or `value` itself when the shape is unchanged.
  mlir::FailureOr<mlir::Value> broadcast(mlir::Value value,
                                         llvm::ArrayRef<int64_t> shape);

  /// `axis` in [-rank, rank) made non-negative; fails naming `what`.
  mlir::FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank,
                                         llvm::StringRef what);
  /// Each of `given` normalized as normalizeAxis does, or every axis of
  /// `rank` in order when there is none (an op's optional `axes`).
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  normalizeAxes(std::optional<llvm::ArrayRef<int64_t>> given, int64_t rank,
                llvm::StringRef what);
  /// The tcc element type of an ONNX data type; fails (Unsupported) naming
  /// the dtype when tcc has none.
  mlir::FailureOr<mlir::Type> elementType(int64_t onnxType);

  //===--- Errors ---------------------------------------------------------===//

  /// Invalid input: "node '<name>' (op '<type>'): <message>" at the model
  /// file's location.
  mlir::LogicalResult fail(const llvm::Twine &message);
  /// Starts an Invalid error about this node ("node ... (op ...): ").
  mlir::InFlightDiagnostic emitError();
  /// Valid model, but tcc does not handle it.
  mlir::LogicalResult unsupported(const llvm::Twine &message);
  /// Input `i` (the `what` of the op) is not known at import time.
  mlir::LogicalResult notConstant(int i, llvm::StringRef what);

private:
  using InferFn = llvm::LogicalResult (*)(
      mlir::MLIRContext *, std::optional<mlir::Location>, mlir::ValueRange,
      mlir::DictionaryAttr, mlir::OpaqueProperties, mlir::RegionRange,
      llvm::SmallVectorImpl<mlir::Type> &);
  mlir::FailureOr<mlir::Operation *> createInferred(mlir::OperationState &state,
                                                    InferFn infer);

  GraphState &graph_;
  const onnx::NodeProto &node_;
  int index_;
  mlir::Location loc_;
};

/// The model being imported: checked, with static input shapes and ONNX's
/// inferred types recorded in the GraphState.
struct LoadedModel {
  onnx::ModelProto model;
  /// Graph inputs that become @forward's arguments, in order.
  std::vector<std::pair<std::string, mlir::RankedTensorType>> inputs;
  /// Graph inputs bound to values by ImportOptions::constantInputs.
  std::vector<std::pair<std::string, mlir::DenseElementsAttr>> fixedInputs;
  /// What torch.export recorded each initializer as (the dynamo-based
  /// exporter's value metadata): "PARAMETER", "BUFFER", ... by name; empty
  /// for other exporters.
  llvm::StringMap<std::string> torchKinds;
};
/// Reads and prepares the model at `graph.path` (see ModelLoader.cpp).
mlir::LogicalResult loadModel(GraphState &graph, const ImportOptions &options,
                              LoadedModel &loaded);
/// "[2x3]": a shape or a list of sizes, for messages.
std::string shapeStr(llvm::ArrayRef<int64_t> shape);

/// Ops whose inputs may be sequences (Sequence.cpp); every other op takes
/// tensors only.
bool takesSequences(llvm::StringRef opType);
/// Reads every tensor of `model` stored as external data into its raw_data
/// (see ExternalData.cpp).
mlir::LogicalResult loadExternalData(GraphState &graph,
                                     onnx::ModelProto &model);

/// Holds back the diagnostics of the ops the importer builds or cleans up:
/// their failure is reported as the importer's own error, which names the
/// node and says why (unsupported, or tcc's internal error).
class HeldError {
public:
  explicit HeldError(mlir::MLIRContext &context);
  /// Stops holding back; the first error's message ("" when none).
  std::string release();

private:
  std::string first;
  std::optional<mlir::ScopedDiagnosticHandler> handler;
};

/// `text` with line breaks and runs of blanks folded into single spaces:
/// library messages can span lines, import errors are one.
std::string oneLine(llvm::StringRef text);

/// "node 'name' (op 'Type')", or "node #12 (op 'Type')" for unnamed nodes.
std::string describeNode(const onnx::NodeProto &node, int index);

using Converter = mlir::LogicalResult (*)(NodeImporter &);
using ConverterTable = llvm::StringMap<Converter>;

/// The table of all converters, keyed by op_type (default domain only).
const ConverterTable &converterTable();

// Each op family registers its converters (one file each).
void registerConstantConverters(ConverterTable &table);
void registerElementwiseConverters(ConverterTable &table);
void registerActivationConverters(ConverterTable &table);
void registerEinsumConverter(ConverterTable &table);
void registerRecurrentConverters(ConverterTable &table);
void registerShapeConverters(ConverterTable &table);
void registerSliceGatherConverters(ConverterTable &table);
void registerReduceConverters(ConverterTable &table);
void registerNnConverters(ConverterTable &table);
void registerLossConverters(ConverterTable &table);
void registerSequenceConverters(ConverterTable &table);
void registerConstOnlyConverters(ConverterTable &table);
void registerAttentionConverters(ConverterTable &table);
void registerVisionConverters(ConverterTable &table);
void registerResizeConverter(ConverterTable &table);

/// After `n`'s converter, whose ops follow `last` in `body` (null: from the
/// start): when every input of the node is an import-time constant, runs
/// those ops in the reference interpreter and makes the node's outputs
/// constants (see FoldNode.cpp). Leaves the node as converted when it cannot
/// (side effects, over kMaxFoldElements, a type no constant holds); fails
/// only when a folded output contradicts ONNX's inferred type.
mlir::LogicalResult foldNode(GraphState &graph, NodeImporter &n,
                             mlir::Block &body, mlir::Operation *last);

/// Decides which initializers become tcc.params; see Initializers.cpp.
struct InitializerPlan {
  /// Initializer name -> true when it is a trainable parameter.
  llvm::StringMap<bool> isParam;
  /// Anonymous initializer -> named one it is the transpose of (PyTorch's
  /// constant folding duplicates a tied weight as W^T).
  llvm::StringMap<std::string> transposeOf;
  /// (copy, parameter): an Identity whose output becomes a parameter of its
  /// own, with the parameter's initial value (an eval-mode export's merged
  /// initializers), in node order.
  std::vector<std::pair<std::string, std::string>> untied;
};
InitializerPlan planInitializers(const onnx::GraphProto &graph,
                                 const llvm::StringMap<std::string> &torchKinds);

/// Recognises PyTorch's decompositions of exact and tanh GELU in `func` and
/// replaces them by tcc.gelu.
void raiseGelu(mlir::Operation *func);

} // namespace tcc::onnx_import

#endif // TCC_LIB_IMPORT_IMPORTER_H
