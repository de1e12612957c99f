// tcc-run: trains a compiled artifact without the compiler (runtime-only
// builds ship this binary). `tcc run` in the compiler driver is the same
// command.
//
//   tcc-run ARTIFACT.tcc --data FILE --steps N [flags]
//   tcc-run inspect ARTIFACT.tcc
#include "run/cli.h"

#include <iostream>

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "inspect")
    return tcc::run::inspectCommand("tcc-run inspect",
                                    {args.begin() + 1, args.end()});
  if (!args.empty() && args[0] == "--version") {
    std::cout << "tcc-run " TCC_VERSION "\n";
    return 0;
  }
  return tcc::run::runCommand("tcc-run", std::move(args));
}
