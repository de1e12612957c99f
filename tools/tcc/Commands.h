#ifndef TCC_TOOLS_TCC_COMMANDS_H
#define TCC_TOOLS_TCC_COMMANDS_H

#include "run/loop.h"

#include <string>
#include <vector>

namespace tcc::driver {

// The commands with LLVM flags, each run after LLVM's parser has filled in
// its cl::SubCommand's flags (tcc.cpp's table lists every command).
int runImport();
int runEval();
int runCompile();
int runTrain();
/// The loop flags of `tcc train`, taken out of argv (run::parseRunFlags)
/// before LLVM's parser sees it.
run::RunOptions &trainRunOptions();
/// `tcc generate ARTIFACT ...` (GenerateCommand.cpp); `args` excludes the
/// program and command names. Parses its own flags, as `tcc run` does.
int generateCommand(std::vector<std::string> args);
/// `tcc plot LOG.csv -o CURVES.html` (PlotCommand.cpp), likewise.
int plotCommand(std::vector<std::string> args);
/// `tcc export CKPT --to OUT` (ExportCommand.cpp): runs the Python package's
/// tcc.export with the arguments.
int exportCommand(std::vector<std::string> args);

} // namespace tcc::driver

#endif // TCC_TOOLS_TCC_COMMANDS_H
