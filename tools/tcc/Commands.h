#ifndef TCC_TOOLS_TCC_COMMANDS_H
#define TCC_TOOLS_TCC_COMMANDS_H

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

} // namespace tcc::driver

#endif // TCC_TOOLS_TCC_COMMANDS_H
