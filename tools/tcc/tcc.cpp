// The tcc driver: one binary, one subcommand per user task.
#include "Commands.h"
#include "Model.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include "run/cli.h"

#include <string>
#include <vector>

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // The runtime's commands parse their own flags (the same as tcc-run's).
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "run")
    return tcc::run::runCommand("run", {args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "inspect")
    return tcc::run::inspectCommand("inspect", {args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "generate")
    return tcc::driver::generateCommand({args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "plot")
    return tcc::driver::plotCommand({args.begin() + 1, args.end()});
  std::vector<char *> kept(argv, argv + argc);
  if (!args.empty() && args[0] == "train") {
    std::vector<std::string> rest(args.begin() + 1, args.end());
    std::string error;
    if (!tcc::run::parseRunFlags(rest, tcc::driver::trainRunOptions(),
                                 error)) {
      llvm::errs() << "tcc: train: " << error << "\n";
      return 1;
    }
    // Keep argv's own strings for the flags LLVM still has to parse.
    kept.assign({argv[0], argv[1]});
    for (int i = 2, j = 0; i < argc && j < int(rest.size()); ++i)
      if (rest[j] == argv[i]) {
        kept.push_back(argv[i]);
        ++j;
      }
    argc = int(kept.size());
    argv = kept.data();
  }
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
      "  tcc compile MODEL --loss L --optimizer O -o OUT.tcc\n"
      "                                        compile the training step to an "
      "artifact\n"
      "  tcc compile MODEL -o OUT.tcc          an inference artifact of the "
      "forward pass\n"
      "  tcc run OUT.tcc --data D.npz --steps N\n"
      "                                        train an artifact (as tcc-run)\n"
      "  tcc inspect OUT.tcc                   inputs, parameters, kernels, "
      "memory plan\n"
      "  tcc generate GEN.tcc --prompt-tokens 1,2 --checkpoint DIR\n"
      "                                        continue a token sequence with "
      "a language model\n"
      "  tcc plot LOG.csv -o CURVES.html       loss, eval loss and learning "
      "rate curves\n"
      "  tcc train MODEL --loss L --data D.npz --steps N\n"
      "                                        compile and run in one "
      "command\n\n"
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
