// `tcc eval`: runs a model's forward function in the reference interpreter
// on named .npz inputs, optionally checking the outputs against expected ones.
#include "Commands.h"
#include "Model.h"

#include "tcc/Import/OnnxTensor.h"
#include "tcc/Interp/Interpreter.h"
#include "tcc/TccOps.h"

#include "checkpoint/checkpoint.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

namespace cl = llvm::cl;
using tcc::data::Array;
using tcc::data::DType;

namespace tcc::driver {

static cl::SubCommand evalCmd("eval", "Run a model's forward pass in the reference interpreter");
static ModelFlags flags(evalCmd);
static cl::opt<std::string> inputsPath("inputs", cl::desc(".npz with one array per graph input, named after it"),
                                       cl::value_desc("file.npz"), cl::sub(evalCmd), cl::cat(flagCategory()));
static cl::opt<std::string> outputsPath("outputs", cl::desc("Write the outputs, named after the graph outputs, to this .npz"),
                                        cl::value_desc("file.npz"), cl::sub(evalCmd), cl::cat(flagCategory()));
static cl::opt<std::string> expectedPath("expected",
                                         cl::desc("Compare the outputs with the arrays of this .npz; exit 1 on mismatch"),
                                         cl::value_desc("file.npz"), cl::sub(evalCmd), cl::cat(flagCategory()));
static cl::opt<double> rtol("rtol", cl::desc("Relative tolerance of --expected (default 1e-5)"),
                            cl::init(1e-5), cl::sub(evalCmd), cl::cat(flagCategory()));
static cl::opt<double> atol("atol", cl::desc("Absolute tolerance of --expected (default 1e-6)"),
                            cl::init(1e-6), cl::sub(evalCmd), cl::cat(flagCategory()));
static cl::opt<bool> f64("f64", cl::desc("Compute in float64 (every f32 value promoted)"),
                         cl::sub(evalCmd), cl::cat(flagCategory()));
static cl::opt<std::string> checkpointPath(
    "checkpoint",
    cl::desc("Run with the parameters of a training checkpoint (a step-N "
             "directory, or the newest under a checkpoint directory) instead "
             "of the model's own"),
    cl::value_desc("dir"), cl::sub(evalCmd), cl::cat(flagCategory()));
static cl::opt<std::string> entry("entry", cl::desc("Function to run (default: forward)"),
                                  cl::init("forward"), cl::sub(evalCmd), cl::cat(flagCategory()));


static double elementAsDouble(const Array &a, int64_t i) {
  switch (a.dtype) {
  case DType::F32: return a.data<float>()[i];
  case DType::F64: return a.data<double>()[i];
  case DType::I64: return static_cast<double>(a.data<int64_t>()[i]);
  case DType::I32: return a.data<int32_t>()[i];
  case DType::Bool: return a.data<uint8_t>()[i] ? 1.0 : 0.0;
  default: return std::nan("");
  }
}

static std::string describe(const Array &a) {
  std::string s = std::string(data::dtypeName(a.dtype)) + "[";
  for (size_t i = 0; i < a.shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(a.shape[i]);
  return s + "]";
}

/// Compares one output with its expected array; prints a line, returns match.
static bool compare(const Array &got, const Array &want) {
  llvm::outs() << "  check '" << got.name << "': ";
  if (got.shape != want.shape) {
    llvm::outs() << "FAIL: shape " << describe(got) << " vs expected " << describe(want) << "\n";
    return false;
  }
  double maxAbs = 0, maxRel = 0;
  int64_t bad = 0;
  for (int64_t i = 0, n = got.numElements(); i < n; ++i) {
    double g = elementAsDouble(got, i), w = elementAsDouble(want, i);
    if (std::isnan(g) && std::isnan(w))
      continue;
    double err = std::fabs(g - w);
    if (std::isnan(err) || err > atol + rtol * std::fabs(w))
      ++bad;
    if (!std::isnan(err)) {
      maxAbs = std::max(maxAbs, err);
      maxRel = std::max(maxRel, err / std::max(std::fabs(w), 1e-30));
    }
  }
  llvm::outs() << (bad ? "FAIL" : "ok") << llvm::format(": max abs err %.3g, max rel err %.3g", maxAbs, maxRel);
  if (bad)
    llvm::outs() << ", " << bad << " of " << got.numElements()
                 << llvm::format(" elements outside rtol %g atol %g", rtol.getValue(),
                                 atol.getValue());
  llvm::outs() << "\n";
  return bad == 0;
}

static void printPreview(const Array &a) {
  llvm::outs() << "output '" << a.name << "' " << describe(a) << ":";
  int64_t n = a.numElements();
  for (int64_t i = 0; i < std::min<int64_t>(n, 6); ++i)
    llvm::outs() << llvm::format(" %.6g", elementAsDouble(a, i));
  llvm::outs() << (n > 6 ? " ...\n" : "\n");
}

/// Replaces every parameter's initial value in `module` by the checkpoint's
/// (tcc run's names, which are the model's); false with `error` when the
/// checkpoint is unreadable, lacks one or holds another dtype or shape.
static bool loadCheckpointParams(mlir::ModuleOp module, const std::string &path,
                                 std::string &error) {
  checkpoint::Checkpoint ck;
  try {
    ck = checkpoint::loadCheckpoint(checkpoint::checkpointStepDir(path));
  } catch (const data::Error &e) {
    error = std::string("--checkpoint ") + e.what();
    return false;
  }
  mlir::MLIRContext &context = *module.getContext();
  for (ParamOp p : module.getOps<ParamOp>()) {
    std::string name = p.getSymName().str();
    const Array *a = data::findArray(ck.params, name);
    if (!a) {
      error = ck.dir + ": no parameter '" + name +
              "' (a checkpoint of another model?)";
      return false;
    }
    mlir::DenseElementsAttr value = arrayToElementsAttr(
        context, *a, [&] { return mlir::InFlightDiagnostic(); });
    if (!value || value.getType() != p.getInitialValue().getType()) {
      error = ck.dir + ": parameter '" + name +
              "' differs in dtype or shape from the model's";
      return false;
    }
    p.setInitialValueAttr(value);
  }
  return true;
}

int runEval() {
  if (inputsPath.empty())
    return fail("eval: --inputs FILE.npz is required");
  mlir::MLIRContext context;
  CommandErrors errors(context, flags.model);
  mlir::OwningOpRef<mlir::ModuleOp> module = loadModel(context, flags);
  if (!module)
    return errors.report();
  auto func = module->lookupSymbol<mlir::func::FuncOp>(entry);
  if (!func)
    return fail("'" + flags.model + "' has no function '" + entry + "'");
  if (!checkpointPath.empty()) {
    std::string error;
    if (!loadCheckpointParams(*module, checkpointPath, error))
      return fail("eval: " + error);
  }

  std::vector<Array> named, expected, ordered, results;
  try {
    named = data::readNpz(inputsPath);
    if (!expectedPath.empty())
      expected = data::readNpz(expectedPath);
  } catch (const data::Error &e) {
    return fail(e.what());
  }
  std::string error;
  if (!interp::bindByName(func, named, ordered, error))
    return fail(inputsPath + ": " + error);
  interp::Options options;
  options.promoteToF64 = f64;
  if (!interp::run(func, ordered, results, error, options))
    return fail(error);
  std::vector<std::string> names = interp::resultNames(func);
  for (size_t i = 0; i < results.size(); ++i) {
    results[i].name = names[i];
    printPreview(results[i]);
  }

  bool ok = true;
  if (!expectedPath.empty()) {
    llvm::outs() << "comparing with " << expectedPath << "\n";
    for (const Array &got : results) {
      const Array *want = data::findArray(expected, got.name);
      if (!want)
        return fail(expectedPath + ": no array named '" + got.name + "'");
      ok &= compare(got, *want);
    }
    llvm::outs() << (ok ? "all outputs match\n" : "MISMATCH\n");
  }
  if (!outputsPath.empty()) {
    try {
      data::writeNpz(outputsPath, results);
    } catch (const data::Error &e) {
      return fail(e.what());
    }
  }
  return ok ? 0 : 1;
}

} // namespace tcc::driver
