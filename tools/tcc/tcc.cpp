// The tcc driver: one binary, one subcommand per user task.
#include "Commands.h"
#include "Model.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "tcc " TCC_VERSION " (LLVM/MLIR " LLVM_VERSION_STRING ")\n";
  });
  llvm::cl::HideUnrelatedOptions(tcc::driver::flagCategory());
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "tcc: ahead-of-time compiler for deep-learning training graphs\n\n"
      "  tcc import MODEL.onnx -o MODEL.mlir   convert ONNX to tcc IR\n"
      "  tcc eval MODEL --inputs in.npz        run the forward pass in the "
      "reference interpreter\n"
      "  tcc compile MODEL --loss L --optimizer O --emit=mlir\n"
      "                                        build the training step\n"
      "  tcc train MODEL --loss L --data D.npz --steps N\n"
      "                                        train in the reference interpreter\n\n"
      "Run 'tcc <command> --help' for a command's flags.\n");
  using namespace tcc::driver;
  if (importChosen())
    return runImport();
  if (evalChosen())
    return runEval();
  if (compileChosen())
    return runCompile();
  if (trainChosen())
    return runTrain();
  llvm::errs() << "tcc: no command given; run 'tcc --help'\n";
  return 1;
}
