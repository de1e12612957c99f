#ifndef TCC_TOOLS_TCC_COMMANDS_H
#define TCC_TOOLS_TCC_COMMANDS_H

#include "run/loop.h"

#include <string>
#include <vector>

namespace tcc::driver {

// Each command reports whether it was chosen on the command line and runs.
bool importChosen();
int runImport();
bool evalChosen();
int runEval();
bool compileChosen();
int runCompile();
bool trainChosen();
int runTrain();
/// The loop flags of `tcc train`, taken out of argv (run::parseRunFlags)
/// before LLVM's parser sees it.
run::RunOptions &trainRunOptions();
/// `tcc generate ARTIFACT ...` (GenerateCommand.cpp); `args` excludes the
/// program and command names. Parses its own flags, as `tcc run` does.
int generateCommand(std::vector<std::string> args);
/// `tcc plot LOG.csv -o CURVES.html` (PlotCommand.cpp), likewise.
int plotCommand(std::vector<std::string> args);

} // namespace tcc::driver

#endif // TCC_TOOLS_TCC_COMMANDS_H
