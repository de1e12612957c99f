// Reading and preparing an ONNX model before conversion: protobuf parsing,
// the supported-op and opset checks (models older than opset 13 upgraded by
// ONNX's version converter), ONNX's checker, static input shapes
// (from the model or ImportOptions), and ONNX's shape inference, whose
// results the converters cross-check their types against.
#include "Importer.h"

#include "tcc/Import/OnnxTensor.h"

#include "onnx/checker.h"
#include "onnx/common/version.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx/version_converter/convert.h"

#include "llvm/ADT/StringExtras.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include <cerrno>
#include <map>
#include <memory>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir;

namespace tcc::onnx_import {

constexpr int64_t kMinOpset = 13;

/// The newest ai.onnx opset the linked ONNX library defines (scripts/
/// onnx-lib.sh builds the version the Python environment pins): its checker
/// and shape inference know every op up to it, and the converters read each
/// op in all its forms from opset 13 on.
static int64_t maxOpset() {
  const auto &ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = ranges.find(onnx::ONNX_DOMAIN);
  return it == ranges.end() ? kMinOpset : it->second.second;
}

std::string oneLine(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef> words;
  llvm::SplitString(text, words, " \t\r\n");
  return llvm::join(words, " ");
}

namespace {

std::string dimsStr(llvm::ArrayRef<int64_t> dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "x" : "") + std::to_string(dims[i]);
  return s;
}

/// Why ONNX's einsumShapeInference cannot take `equation`, or "": without
/// its spaces (all ONNX removes) it must have only letters, ',' and "..."
/// before its "->". ONNX's inference loops forever on any other character
/// there (it skips one without advancing; found by scripts/fuzz.sh).
std::string einsumEquationProblem(const std::string &equation) {
  std::string eq;
  for (char ch : equation)
    if (ch != ' ')
      eq += ch;
  llvm::StringRef lhs = llvm::StringRef(eq).split("->").first;
  bool ellipsis = false; // in this term
  for (size_t i = 0; i < lhs.size();) {
    char ch = lhs[i];
    if (ch == '.') {
      size_t run = lhs.find_first_not_of('.', i);
      run = (run == llvm::StringRef::npos ? lhs.size() : run) - i;
      if (run != 3)
        return "Einsum equation: " + std::to_string(run) +
               " dots where an ellipsis is '...'";
      if (ellipsis)
        return "Einsum equation: '...' twice in one term";
      ellipsis = true;
      i += 3;
      continue;
    }
    if (ch == ',')
      ellipsis = false;
    else if (!llvm::isAlpha(ch))
      return "Einsum equation: a label that is not a letter";
    ++i;
  }
  return "";
}

/// Fails shape inference on an equation einsumEquationProblem refuses.
void checkEinsumEquation(onnx::InferenceContext &ctx) {
  if (const onnx::AttributeProto *attr = ctx.getAttribute("equation"))
    if (std::string problem = einsumEquationProblem(attr->s());
        !problem.empty())
      fail_shape_inference(problem);
}

/// ONNX's schema registry, except that every op's shape inference first
/// checks what some of ONNX's inference functions take on trust: an `axis`
/// attribute against its first input's rank (LayerNormalization with axis <
/// -rank writes before its shape's first dim) and Einsum's equation
/// (checkEinsumEquation). What is out of range fails the node's inference
/// as ONNX's own checks do, and the converter then reports it.
class CheckedSchemas final : public onnx::ISchemaRegistry {
public:
  const onnx::OpSchema *GetSchema(const std::string &key, int maxInclusiveVersion,
                                  const std::string &domain) const override {
    const onnx::OpSchema *schema = onnx::OpSchemaRegistry::Instance()->GetSchema(
        key, maxInclusiveVersion, domain);
    if (!schema || !schema->has_type_and_shape_inference_function())
      return schema;
    auto [it, added] = checked.try_emplace(schema, nullptr);
    if (added) {
      it->second = std::make_unique<onnx::OpSchema>(*schema);
      // Axes index the first input's dims, except Flatten's (which may
      // also be the rank) and OneHot's (which index its output's).
      int64_t below = key == "OneHot" ? 1 : 0,
              above = key == "OneHot" || key == "Flatten" ? 1 : 0;
      it->second->TypeAndShapeInferenceFunction(
          [inner = schema->GetTypeAndShapeInferenceFunction(), below, above,
           einsum = key == "Einsum"](onnx::InferenceContext &ctx) {
            if (einsum)
              checkEinsumEquation(ctx);
            const onnx::AttributeProto *axis = ctx.getAttribute("axis");
            const onnx::TypeProto *in =
                ctx.getNumInputs() ? ctx.getInputType(0) : nullptr;
            if (axis && in && in->has_tensor_type() &&
                in->tensor_type().has_shape()) {
              int64_t rank = in->tensor_type().shape().dim_size();
              if (axis->i() < -rank - below || axis->i() > rank - 1 + above)
                fail_shape_inference("axis ", axis->i(),
                                     " is out of range for rank ", rank);
            }
            inner(ctx);
          });
    }
    return it->second.get();
  }

private:
  mutable std::map<const onnx::OpSchema *, std::unique_ptr<onnx::OpSchema>>
      checked;
};

/// ONNX's shape inference over `model` (may throw), with CheckedSchemas.
void inferOnnxShapes(onnx::ModelProto &model) {
  CheckedSchemas schemas;
  onnx::shape_inference::InferShapes(
      model, &schemas,
      onnx::ShapeInferenceOptions(/*check_type=*/false, /*error_mode=*/0));
}

struct Loader {
  GraphState &graph;
  const ImportOptions &options;
  LoadedModel &loaded;
  onnx::ModelProto &model = loaded.model;

  LogicalResult readModel();
  LogicalResult checkOps();
  LogicalResult checkOpsAndOpset();
  LogicalResult upgradeOpset();
  LogicalResult checkTensors(const onnx::GraphProto &g);
  LogicalResult resolveInputShapes();
  LogicalResult inferShapes();
  void noteEvalModeExport();
  void noteOptimizedDynamoExport();
  void readTorchKinds();
};

LogicalResult Loader::readModel() {
  // Parsed straight from the file descriptor: a buffer or mapping of the
  // whole file would hold every weight a second time while the message
  // holds the first (a 124M-parameter model is 500 MB of each).
  int fd = ::open(graph.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return graph.fail(ImportFailure::Invalid,
                      "cannot open file: " + std::string(std::strerror(errno)));
  struct CloseFd {
    int fd;
    ~CloseFd() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return graph.fail(ImportFailure::Invalid,
                      "cannot open file: " + std::string(std::strerror(errno)));
  if (S_ISDIR(st.st_mode))
    return graph.fail(ImportFailure::Invalid,
                      "cannot open file: " +
                          std::string(std::strerror(EISDIR)));
  if (uint64_t(st.st_size) > uint64_t(INT_MAX))
    return graph.fail(ImportFailure::Unsupported,
                      "models over 2 GiB (protobuf's limit) are not supported");
  google::protobuf::io::FileInputStream file(fd, /*block_size=*/1 << 20);
  google::protobuf::io::CodedInputStream stream(&file);
  stream.SetTotalBytesLimit(INT_MAX);
  if (!model.ParseFromCodedStream(&stream) || !stream.ConsumedEntireMessage() ||
      file.GetErrno() != 0)
    return graph.fail(ImportFailure::Invalid,
                      "not a valid ONNX model (protobuf parse failed; the file "
                      "is truncated or not ONNX)");
  if (!model.has_graph())
    return graph.fail(ImportFailure::Invalid,
                      "not a valid ONNX model (no graph; the file is empty, "
                      "truncated or not ONNX)");
  // Either would import, evaluate and compile to nothing at all.
  if (model.graph().output_size() == 0)
    return graph.fail(ImportFailure::Invalid,
                      "the graph has no outputs: there is nothing to compute");
  if (model.graph().node_size() == 0)
    return graph.fail(ImportFailure::Invalid,
                      "the graph has no nodes: there is nothing to compute");
  // Before resolveInputShapes, which may clear value_info.
  readTorchKinds();
  return success();
}

LogicalResult Loader::checkOps() {
  // Ops first: a model made only of other domains' ops (training, ML) has
  // no ai.onnx opset at all, and "unsupported op" is the useful message.
  // Before the checker too, whose message for an op it does not know either
  // is less direct than ours.
  for (const onnx::OperatorSetIdProto &o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx")
      graph.opset = o.version();
  // Every unsupported node at once: a user converting a model wants the
  // whole list, not one op per attempt.
  const ConverterTable &table = converterTable();
  std::vector<std::string> unsupported;
  for (int i = 0; i < model.graph().node_size(); ++i) {
    const onnx::NodeProto &node = model.graph().node(i);
    bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
    if (!defaultDomain || !table.count(node.op_type()))
      unsupported.push_back(describeNode(node, i));
  }
  std::string opset =
      graph.opset ? " (opset " + std::to_string(graph.opset) + ")" : "";
  if (unsupported.size() == 1)
    return graph.fail(ImportFailure::Unsupported,
                      unsupported[0] + ": unsupported op" + opset);
  if (!unsupported.empty())
    return graph.fail(ImportFailure::Unsupported,
                      std::to_string(unsupported.size()) + " unsupported ops" +
                          opset + ": " + llvm::join(unsupported, ", "));
  return success();
}

LogicalResult Loader::checkOpsAndOpset() {
  if (failed(checkOps()))
    return failure();
  if (graph.opset == 0)
    return graph.fail(ImportFailure::Invalid,
                      "not a valid ONNX model (no ai.onnx opset import)");
  if (int64_t newest = maxOpset(); graph.opset > newest)
    return graph.fail(ImportFailure::Unsupported,
                      "opset " + std::to_string(graph.opset) +
                          " is not supported (tcc imports opsets " +
                          std::to_string(kMinOpset) + " to " +
                          std::to_string(newest) + ", the newest ONNX " +
                          ONNX_VERSION_STRING +
                          " defines, and older ones by upgrading them)");
  // Every tensor before ONNX's checker and shape inference, which parse
  // them trusting their dims (a short raw_data is read past its end);
  // tensors in external files are read in first.
  if (failed(loadExternalData(graph, model)) ||
      failed(checkTensors(model.graph())))
    return failure();
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception &e) {
    return graph.fail(ImportFailure::Invalid,
                      "invalid ONNX model: " + oneLine(e.what()));
  }
  return success();
}

LogicalResult Loader::upgradeOpset() {
  // ONNX's own version converter (the library the importer links, not rules
  // of ours) rewrites every node to its opset-13 form: attributes that became
  // inputs (Split's split, Squeeze's axes, ...), renamed ops. It runs on the
  // checked model with its static input shapes, and some adapters (Softmax's
  // axis) need the shapes that ONNX's inference gives the inner values.
  if (graph.opset >= kMinOpset)
    return success();
  int64_t from = graph.opset;
  // The converter runs ONNX's inference with ONNX's own schemas, not
  // CheckedSchemas: what those refuse is refused here first.
  for (int i = 0; i < model.graph().node_size(); ++i) {
    const onnx::NodeProto &node = model.graph().node(i);
    if (node.op_type() != "Einsum")
      continue;
    for (const onnx::AttributeProto &attr : node.attribute())
      if (attr.name() == "equation")
        if (std::string problem = einsumEquationProblem(attr.s());
            !problem.empty())
          return graph.fail(ImportFailure::Invalid,
                            describeNode(node, i) + ": " + problem);
  }
  try {
    inferOnnxShapes(model);
  } catch (const std::exception &) {
    // The converter says what it needed, should it need a shape.
  }
  onnx::ModelProto upgraded;
  try {
    upgraded = onnx::version_conversion::ConvertVersion(model, kMinOpset);
  } catch (const std::exception &e) {
    // Its adapters fail with assertions; the source location is noise.
    std::string why = oneLine(e.what());
    if (size_t at = why.find("failed: "); why.find("Assertion") != std::string::npos && at != std::string::npos)
      why = why.substr(at + 8);
    return graph.fail(ImportFailure::Unsupported,
                      "opset " + std::to_string(from) +
                          ": ONNX's version converter cannot upgrade the "
                          "model to opset " +
                          std::to_string(kMinOpset) + ": " + why);
  }
  // Shapes recorded in value_info are inferred again after the upgrade.
  model = std::move(upgraded);
  model.mutable_graph()->clear_value_info();
  graph.opset = kMinOpset;
  graph.upgradedFrom = from;
  // The converter's own tensors are checked like the model's were, and an
  // old op may become one tcc does not import.
  if (failed(checkTensors(model.graph())))
    return failure();
  return checkOps();
}

LogicalResult Loader::checkTensors(const onnx::GraphProto &g) {
  auto check = [&](const onnx::TensorProto &t, const std::string &where) {
    return checkTensorProto(
        t, [&] { return graph.emitError(ImportFailure::Invalid) << where; });
  };
  for (const onnx::TensorProto &t : g.initializer())
    if (failed(check(t, "initializer ")))
      return failure();
  for (const onnx::SparseTensorProto &t : g.sparse_initializer())
    if (failed(check(t.values(), "sparse initializer values ")) ||
        failed(check(t.indices(), "sparse initializer indices ")))
      return failure();
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto &node = g.node(i);
    for (const onnx::AttributeProto &a : node.attribute()) {
      std::string where = printable(describeNode(node, i)) + ": attribute '" +
                          printable(a.name()) + "': ";
      if (a.has_t() && failed(check(a.t(), where)))
        return failure();
      for (const onnx::TensorProto &t : a.tensors())
        if (failed(check(t, where)))
          return failure();
      if (a.has_sparse_tensor() &&
          (failed(check(a.sparse_tensor().values(), where)) ||
           failed(check(a.sparse_tensor().indices(), where))))
        return failure();
      if (a.has_g() && failed(checkTensors(a.g())))
        return failure();
      for (const onnx::GraphProto &sub : a.graphs())
        if (failed(checkTensors(sub)))
          return failure();
    }
  }
  return success();
}

LogicalResult Loader::resolveInputShapes() {
  onnx::GraphProto &g = *model.mutable_graph();
  llvm::StringSet<> initializers;
  for (const onnx::TensorProto &t : g.initializer())
    initializers.insert(t.name());
  std::vector<std::string> names;
  for (const onnx::ValueInfoProto &in : g.input())
    if (!initializers.contains(in.name()))
      names.push_back(in.name());
  for (const auto &[name, dims] : options.inputShapes)
    if (!llvm::is_contained(names, name))
      return graph.fail(ImportFailure::Invalid,
                        "--input-shape names '" + name +
                            "', which is not a graph input (inputs: " +
                            llvm::join(names, ", ") + ")");
  for (const auto &entry : options.constantInputs)
    if (!llvm::is_contained(names, entry.first))
      return graph.fail(ImportFailure::Invalid,
                        "constant input '" + entry.first +
                            "' is not a graph input (inputs: " +
                            llvm::join(names, ", ") + ")");

  for (onnx::ValueInfoProto &in : *g.mutable_input()) {
    if (initializers.contains(in.name()))
      continue;
    const std::string &name = in.name();
    if (!in.type().has_tensor_type())
      return graph.fail(ImportFailure::Unsupported,
                        "input '" + name + "' is not a tensor");
    const onnx::TypeProto::Tensor &tt = in.type().tensor_type();
    Type elem = onnxElementType(graph.context, tt.elem_type());
    if (!elem)
      return graph.fail(ImportFailure::Unsupported,
                        "input '" + name + "' has unsupported dtype " +
                            onnxDTypeName(tt.elem_type()));
    std::vector<int64_t> dims;
    auto given = options.inputShapes.find(name);
    auto fixed = options.constantInputs.find(name);
    if (fixed != options.constantInputs.end()) {
      DenseElementsAttr value =
          arrayToElementsAttr(graph.context, fixed->second, [&] {
            return graph.emitError(ImportFailure::Unsupported)
                   << "constant input '" << printable(name) << "': ";
          });
      if (!value)
        return failure();
      dims = fixed->second.shape;
      if (value.getElementType() != elem ||
          (tt.has_shape() && tt.shape().dim_size() != int(dims.size())))
        return graph.fail(ImportFailure::Invalid,
                          "constant input '" + name + "' is " +
                              data::dtypeName(fixed->second.dtype) + "[" +
                              dimsStr(dims) +
                              "], which does not match the model");
      loaded.fixedInputs.emplace_back(name, value);
    } else if (given != options.inputShapes.end()) {
      dims = given->second;
      if (tt.has_shape() && tt.shape().dim_size() != int(dims.size()))
        return graph.fail(
            ImportFailure::Invalid,
            "--input-shape " + name + "=" + dimsStr(dims) + " has rank " +
                std::to_string(dims.size()) + ", but the model's input '" +
                name + "' has rank " + std::to_string(tt.shape().dim_size()));
      if (llvm::any_of(dims, [](int64_t d) { return d < 0; }))
        return graph.fail(ImportFailure::Invalid,
                          "--input-shape " + name + "=" + dimsStr(dims) +
                              " has a negative dimension");
    } else if (!tt.has_shape()) {
      return graph.fail(ImportFailure::Invalid,
                        "input '" + name +
                            "' has no shape in the model; give "
                            "it one with --input-shape " +
                            name + "=<d0>x<d1>...");
    } else {
      std::string suggestion;
      int dynamic = -1;
      for (int d = 0; d < tt.shape().dim_size(); ++d) {
        const auto &dim = tt.shape().dim(d);
        bool known = dim.has_dim_value() && dim.dim_value() >= 0;
        if (!known && dynamic < 0)
          dynamic = d;
        dims.push_back(known ? dim.dim_value() : -1);
        suggestion +=
            (d ? "x" : "") +
            (known ? std::to_string(dim.dim_value())
                   : "<" +
                         (dim.dim_param().empty() ? "d" + std::to_string(d)
                                                  : dim.dim_param()) +
                         ">");
      }
      if (dynamic >= 0) {
        const std::string &param = tt.shape().dim(dynamic).dim_param();
        return graph.fail(ImportFailure::Invalid,
                          "input '" + name + "' has dynamic dimension " +
                              std::to_string(dynamic) +
                              (param.empty() ? "" : " ('" + param + "')") +
                              "; give it a static shape with --input-shape " +
                              name + "=" + suggestion);
      }
    }
    // ONNX shape inference below then works from the same static shapes.
    auto *shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->clear_dim();
    for (int64_t d : dims)
      shape->add_dim()->set_dim_value(d);
    if (fixed == options.constantInputs.end())
      loaded.inputs.emplace_back(name, RankedTensorType::get(dims, elem));
  }
  if (!options.inputShapes.empty() || !options.constantInputs.empty()) {
    // Shapes recorded for the exported sizes would contradict new ones.
    g.clear_value_info();
    for (onnx::ValueInfoProto &out : *g.mutable_output())
      out.mutable_type()->mutable_tensor_type()->clear_shape();
  }
  return success();
}

LogicalResult Loader::inferShapes() {
  // Only a cross-check: when ONNX's inference gives up on a model (its
  // messages are also less specific than the converters'), import without.
  try {
    inferOnnxShapes(model);
  } catch (const std::exception &) {
    return success();
  }
  auto record = [&](const onnx::ValueInfoProto &vi) {
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape())
      return;
    const auto &tt = vi.type().tensor_type();
    Type elem = onnxElementType(graph.context, tt.elem_type());
    llvm::SmallVector<int64_t> dims;
    for (const auto &d : tt.shape().dim()) {
      if (!d.has_dim_value())
        return;
      dims.push_back(d.dim_value());
    }
    if (elem)
      graph.inferred[vi.name()] = RankedTensorType::get(dims, elem);
  };
  for (const onnx::ValueInfoProto &vi : model.graph().value_info())
    record(vi);
  for (const onnx::ValueInfoProto &vi : model.graph().output())
    record(vi);
  return success();
}

} // namespace

/// torch.onnx.export's defaults (eval mode, constant folding) leave marks:
/// Linear weights pre-transposed into new initializers named
/// "onnx::MatMul_N", and parameters equal by value deduplicated into
/// Identity copies of one initializer. Such a model imports and trains (the
/// copies are untied, see Initializers.cpp), but the folded weights have
/// names apart from the PyTorch parameters (and dropout and batch norm lose
/// their training behaviour), so a warning says how to export for training. One Identity alone is also what a training
/// export of tied weights looks like.
void Loader::noteEvalModeExport() {
  const onnx::GraphProto &g = model.graph();
  llvm::StringSet<> initializers;
  int folded = 0, copies = 0;
  for (const onnx::TensorProto &t : g.initializer()) {
    initializers.insert(t.name());
    folded += llvm::StringRef(t.name()).starts_with("onnx::MatMul_");
  }
  for (const onnx::NodeProto &node : g.node())
    copies += node.op_type() == "Identity" && node.input_size() == 1 &&
              initializers.contains(node.input(0));
  if (folded == 0 && copies < 2)
    return;
  std::string marks;
  if (folded)
    marks = std::to_string(folded) +
            " weights folded into onnx::MatMul_N initializers, which train "
            "under those names, not PyTorch's";
  if (copies)
    marks += (folded ? "; " : "") + std::to_string(copies) +
             " Identity copies of initializers, each untied into a "
             "parameter of its own";
  emitWarning(graph.loc)
      << "looks like an eval-mode export (" << marks
      << "); export with training=torch.onnx.TrainingMode.TRAINING, "
         "do_constant_folding=False (see the user guide, \"Exporting from "
         "PyTorch\")";
}

/// The dynamo-based exporter records each parameter's origin on its
/// initializer (pkg.torch.export.graph_signature.InputSpec.kind). Its
/// optimizer (on by default) folds weight transposes, slices and a tied
/// weight's second use into new initializers (val_N, ...) that carry no
/// record: they train under those names, and a tied weight comes untied.
void Loader::readTorchKinds() {
  const onnx::GraphProto &g = model.graph();
  auto read = [&](const onnx::ValueInfoProto &vi) {
    for (const onnx::StringStringEntryProto &kv : vi.metadata_props())
      if (kv.key() == "pkg.torch.export.graph_signature.InputSpec.kind")
        loaded.torchKinds[vi.name()] = kv.value();
  };
  for (const onnx::ValueInfoProto &vi : g.input())
    read(vi);
  for (const onnx::ValueInfoProto &vi : g.value_info())
    read(vi);
}

void Loader::noteOptimizedDynamoExport() {
  const onnx::GraphProto &g = model.graph();
  auto recorded = [&](const onnx::TensorProto &t) {
    return loaded.torchKinds.contains(t.name());
  };
  if (!llvm::any_of(g.initializer(), recorded))
    return;
  std::vector<std::string> made;
  for (const onnx::TensorProto &t : g.initializer())
    if (!recorded(t) && t.dims_size() >= 1 &&
        (t.data_type() == onnx::TensorProto::FLOAT ||
         t.data_type() == onnx::TensorProto::DOUBLE))
      made.push_back(t.name());
  if (made.empty())
    return;
  std::string names;
  for (size_t i = 0; i < made.size() && i < 4; ++i)
    names += (i ? ", " : "") + printable(made[i]);
  if (made.size() > 4)
    names += ", ...";
  emitWarning(graph.loc)
      << "looks like a dynamo export with its optimizer on (" << made.size()
      << " float initializers without PyTorch's parameter record: " << names
      << "); folded weights train under those names and tied weights come "
         "untied; export with torch.onnx.export(..., dynamo=True, "
         "optimize=False) (see the user guide, \"Exporting from PyTorch\")";
}

LogicalResult loadModel(GraphState &graph, const ImportOptions &options,
                        LoadedModel &loaded) {
  Loader loader{graph, options, loaded};
  auto timed = [&](StringRef name, LogicalResult (Loader::*stage)()) {
    TimingScope scope =
        options.timing ? options.timing->nest(name) : TimingScope();
    return (loader.*stage)();
  };
  if (failed(timed("parse", &Loader::readModel)) ||
      failed(timed("onnx checker", &Loader::checkOpsAndOpset)) ||
      failed(loader.resolveInputShapes()) ||
      failed(timed("onnx version converter", &Loader::upgradeOpset)) ||
      failed(timed("onnx shape inference", &Loader::inferShapes)))
    return failure();
  loader.noteEvalModeExport();
  loader.noteOptimizedDynamoExport();
  return success();
}

} // namespace tcc::onnx_import
