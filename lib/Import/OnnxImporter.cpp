// The import driver: load the model (ModelLoader.cpp), make params and
// constants of the initializers, convert the nodes in order through the
// converter table (folding each node whose inputs are all constants,
// FoldNode.cpp), then clean up (GELU, attention, canonicalize, CSE).
#include "Importer.h"

#include "tcc/TccBatchNorm.h"

#include "exec/ExecOps.h"
#include "tcc/Import/OnnxTensor.h"
#include "tcc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace tcc {

void registerImportDialects(MLIRContext &context) {
  context.loadDialect<TccDialect, exec::ExecDialect, func::FuncDialect>();
}

namespace onnx_import {
namespace {

/// Non-parameter initializers above this size become dense resources like
/// the weights instead of constants the importer folds: folding is for
/// shapes, axes and indices, and a large tensor in a dense attribute would
/// be held (and hashed, and printed) as a second copy of its bytes.
constexpr uint64_t kMaxFoldedInitializerBytes = 64 * 1024;

bool isLargeTensor(const onnx::TensorProto &t) {
  if (llvm::any_of(t.dims(), [](int64_t d) { return d <= 0; }))
    return false; // empty, or invalid (reported when decoded)
  std::optional<data::DType> dtype = onnxToDType(t.data_type());
  uint64_t bytes = dtype ? data::dtypeSize(*dtype) : 1;
  for (int64_t d : t.dims()) {
    if (uint64_t(d) > kMaxFoldedInitializerBytes / bytes)
      return true;
    bytes *= uint64_t(d);
  }
  return bytes > kMaxFoldedInitializerBytes;
}

class Importer {
public:
  Importer(MLIRContext &context, const std::string &path,
           const ImportOptions &options)
      : graph(context, path), options(options) {}

  OwningOpRef<ModuleOp> run();
  ImportFailure failureKind() const { return graph.failure; }

private:
  LogicalResult convertGraph(ModuleOp module);
  LogicalResult finish(ModuleOp module);

  GraphState graph;
  const ImportOptions &options;
  LoadedModel loaded;
  onnx::ModelProto &model = loaded.model;
};

LogicalResult Importer::convertGraph(ModuleOp module) {
  const onnx::GraphProto &g = model.graph();
  MLIRContext &ctx = graph.context;
  OpBuilder &b = graph.builder;
  Location loc = graph.loc;
  InitializerPlan plan = planInitializers(g, loaded.torchKinds);

  b.setInsertionPointToEnd(module.getBody());
  std::vector<std::pair<std::string, RankedTensorType>> params;
  std::vector<std::pair<std::string, DenseResourceElementsAttr>> large;
  llvm::StringMap<DenseResourceElementsAttr> paramValues;
  for (onnx::TensorProto &t : *model.mutable_graph()->mutable_initializer()) {
    if (plan.transposeOf.count(t.name()))
      continue;
    if (t.name() == "forward")
      return graph.fail(ImportFailure::Unsupported,
                        "initializer 'forward' clashes with the name of the "
                        "imported function");
    if (!onnxElementType(ctx, t.data_type()))
      return graph.fail(ImportFailure::Unsupported,
                        "initializer '" + t.name() +
                            "' has unsupported dtype " +
                            onnxDTypeName(t.data_type()));
    auto initializerError = [&] {
      return graph.emitError(ImportFailure::Invalid) << "initializer ";
    };
    bool param = plan.isParam.lookup(t.name());
    if (!param && !isLargeTensor(t)) {
      // Shapes, axes, indices, masks: known at import time and folded.
      DenseElementsAttr value =
          tensorProtoToElementsAttr(ctx, t, initializerError);
      if (!value)
        return failure();
      graph.values[t.name()] = ValueInfo{nullptr, value};
      continue;
    }
    // Weights and large constants keep their bytes in one resource blob,
    // taken over from the message: never a dense attribute, never copied.
    DenseResourceElementsAttr value =
        takeTensorProtoAsResource(ctx, t, initializerError);
    if (!value)
      return failure();
    if (param) {
      ParamOp::create(b, loc, t.name(), llvm::cast<ElementsAttr>(value));
      params.emplace_back(t.name(),
                          llvm::cast<RankedTensorType>(value.getType()));
      paramValues[t.name()] = value;
    } else {
      large.emplace_back(t.name(), value);
    }
  }

  // An eval-mode export's merged copies: parameters of their own, starting
  // from the same bytes (one blob, read only at initialisation).
  llvm::StringSet<> untied;
  for (const auto &[copy, of] : plan.untied) {
    DenseResourceElementsAttr value = paramValues.lookup(of);
    if (!value)
      continue; // not reached: planInitializers saw it is a parameter
    ParamOp::create(b, loc, copy, llvm::cast<ElementsAttr>(value));
    params.emplace_back(copy, llvm::cast<RankedTensorType>(value.getType()));
    untied.insert(copy);
  }

  // PyTorch's step counter of each batch norm (`bn1.num_batches_tracked`),
  // which exporters drop as unused: a parameter the training step counts.
  for (const onnx::NodeProto &node : g.node()) {
    if (node.op_type() != "BatchNormalization" || node.input_size() < 4 ||
        !paramValues.count(node.input(3)))
      continue;
    std::optional<std::string> counter = batchCounterName(node.input(3));
    if (!counter || paramValues.count(*counter) ||
        module.lookupSymbol(*counter))
      continue;
    auto type = RankedTensorType::get({}, b.getI64Type());
    DenseElementsAttr start = graph.values.count(*counter)
                                  ? graph.values[*counter].constant
                                  : DenseElementsAttr();
    if (!start || start.getType() != type)
      start = DenseElementsAttr::get(type, b.getI64IntegerAttr(0).getValue());
    graph.values.erase(*counter);
    ParamOp::create(b, loc, *counter, llvm::cast<ElementsAttr>(start));
  }

  llvm::SmallVector<Type> argTypes;
  for (auto &[name, type] : loaded.inputs)
    argTypes.push_back(type);
  auto func = func::FuncOp::create(b, loc, "forward",
                                   FunctionType::get(&ctx, argTypes, {}));
  Block *body = func.addEntryBlock();
  b.setInsertionPointToEnd(body);
  for (auto [i, in] : llvm::enumerate(loaded.inputs)) {
    graph.values[in.first] = ValueInfo{body->getArgument(i), nullptr};
    func.setArgAttr(i, "tcc.name", StringAttr::get(&ctx, in.first));
  }
  for (auto &[name, value] : loaded.fixedInputs)
    graph.values[name] = ValueInfo{nullptr, value};
  for (auto &[name, type] : params)
    graph.values[name] =
        ValueInfo{GetParamOp::create(b, loc, type, name), nullptr};
  // Not folded (too large to evaluate at import time); unused ones are
  // erased with the other dead ops.
  for (auto &[name, value] : large)
    graph.values[name] = ValueInfo{
        ConstantOp::create(b, loc, llvm::cast<ElementsAttr>(value)), nullptr};
  for (const auto &entry : plan.transposeOf) {
    Value w = graph.values.at(entry.second).value;
    graph.values[entry.first().str()] = ValueInfo{
        TransposeOp::create(b, loc, w, llvm::ArrayRef<int64_t>{1, 0}), nullptr};
  }

  for (const onnx::NodeProto &node : g.node())
    for (const std::string &in : node.input())
      graph.used.insert(in);
  for (const onnx::ValueInfoProto &out : g.output())
    graph.used.insert(out.name());

  const ConverterTable &table = converterTable();
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto &node = g.node(i);
    if (node.op_type() == "Identity" && node.output_size() == 1 &&
        untied.contains(node.output(0)))
      continue;
    NodeImporter n(graph, node, i);
    for (const std::string &in : node.input()) {
      if (in.empty() || graph.values.count(in))
        continue;
      if (!graph.sequences.count(in))
        return n.fail("input '" + in + "' is not defined before this node");
      if (!takesSequences(node.op_type()))
        return n.unsupported("input '" + in +
                             "' is a sequence, which this op does not take");
    }
    Operation *last = body->empty() ? nullptr : &body->back();
    if (failed(table.lookup(node.op_type())(n)))
      return failure();
    for (const std::string &out : node.output())
      if (!out.empty() && graph.used.contains(out) && !graph.values.count(out) &&
          !graph.sequences.count(out))
        return graph.fail(ImportFailure::Internal,
                          describeNode(node, i) + ": internal error: output '" +
                              out + "' was not produced");
    if (failed(foldNode(graph, n, *body, last)))
      return failure();
  }

  llvm::SmallVector<Value> results;
  for (const onnx::ValueInfoProto &out : g.output()) {
    auto it = graph.values.find(out.name());
    if (it == graph.values.end() && graph.sequences.count(out.name()))
      return graph.fail(ImportFailure::Unsupported,
                        "graph output '" + out.name() +
                            "' is a sequence (tcc's outputs are tensors)");
    if (it == graph.values.end())
      return graph.fail(ImportFailure::Invalid,
                        "graph output '" + out.name() + "' is never computed");
    ValueInfo &info = it->second;
    if (!info.value)
      info.value = ConstantOp::create(b, loc, info.constant);
    int32_t declared = out.type().tensor_type().elem_type();
    Type elem =
        llvm::cast<RankedTensorType>(info.value.getType()).getElementType();
    if (declared != 0 && onnxElementType(ctx, declared) != elem)
      return graph.fail(ImportFailure::Invalid,
                        "graph output '" + out.name() + "' is declared " +
                            onnxDTypeName(declared) +
                            " but computed as another type");
    results.push_back(info.value);
  }
  func::ReturnOp::create(b, loc, results);
  func.setType(
      FunctionType::get(&ctx, argTypes, ValueRange(results).getTypes()));
  for (auto [i, out] : llvm::enumerate(g.output()))
    func.setResultAttr(i, "tcc.name", StringAttr::get(&ctx, out.name()));
  return success();
}

/// Side-effect-free ops nobody reads: transposes folded into matmuls, shape
/// values materialised once and then consumed only as constants.
void eraseDeadOps(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
    if (op.use_empty() && !op.hasTrait<OpTrait::IsTerminator>() &&
        isMemoryEffectFree(&op))
      op.erase();
}

LogicalResult Importer::finish(ModuleOp module) {
  // What fails here is tcc's own doing, and said so.
  HeldError held(graph.context);
  auto func = llvm::cast<func::FuncOp>(module.lookupSymbol("forward"));
  if (options.raiseGelu)
    raiseGelu(func);
  eraseDeadOps(func.getBody().front());
  if (options.raiseAttention) {
    PassManager pm(&graph.context);
    TimingScope scope = options.timing
                            ? options.timing->nest("post-import passes")
                            : TimingScope();
    if (options.timing)
      pm.enableTiming(scope);
    pm.addNestedPass<func::FuncOp>(createRaiseAttention());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    if (failed(pm.run(module)))
      return graph.fail(ImportFailure::Internal,
                        "internal error: post-import passes failed: " +
                            oneLine(held.release()));
  }
  if (failed(verify(module)))
    return graph.fail(ImportFailure::Internal,
                      "internal error: imported IR does not verify: " +
                          oneLine(held.release()));
  return success();
}

OwningOpRef<ModuleOp> Importer::run() {
  registerImportDialects(graph.context);
  if (failed(loadModel(graph, options, loaded)))
    return nullptr;
  OwningOpRef<ModuleOp> module = ModuleOp::create(graph.loc);
  {
    TimingScope scope =
        options.timing ? options.timing->nest("convert") : TimingScope();
    if (failed(convertGraph(*module)))
      return nullptr;
  }
  if (failed(finish(*module)))
    return nullptr;
  return module;
}

} // namespace
} // namespace onnx_import

OwningOpRef<ModuleOp> importOnnxFile(MLIRContext &context,
                                     const std::string &path,
                                     const ImportOptions &options,
                                     ImportFailure *failure) {
  onnx_import::Importer importer(context, path, options);
  OwningOpRef<ModuleOp> module;
  try {
    module = importer.run();
  } catch (const std::exception &e) {
    // Library code (protobuf, ONNX) throws; nothing may escape to the caller.
    emitError(NameLoc::get(StringAttr::get(&context, path)))
        << "internal error: " << onnx_import::oneLine(e.what());
    if (failure)
      *failure = ImportFailure::Internal;
    return nullptr;
  }
  if (!module && failure)
    *failure = importer.failureKind();
  return module;
}

} // namespace tcc
