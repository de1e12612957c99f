//===- cli.h - `tcc run` / `tcc-run` and `tcc inspect` ----------*- C++ -*-===//
//
// The command lines of the runtime tools, parsed without LLVM so that
// `tcc-run` (runtime-only builds) and `tcc run` (the compiler driver, which
// forwards its arguments here) accept exactly the same flags.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_RUN_CLI_H
#define TCC_RUNTIME_RUN_CLI_H

#include "run/loop.h"

#include <string>
#include <vector>

namespace tcc::run {

/// The flags of the training loop as `--name value` / `--name=value`
/// pairs, for `tcc run` and the loop part of `tcc train`. Consumes the
/// flags it knows from `args` and leaves the rest. False with `error` on a
/// malformed value.
bool parseRunFlags(std::vector<std::string> &args, RunOptions &options,
                   std::string &error);

/// The --help text of the loop's flags.
const char *runFlagsHelp();

/// `tcc run ARTIFACT [flags]` / `tcc-run ARTIFACT [flags]`; `args` excludes
/// the program and command names. `program` prefixes messages.
int runCommand(const std::string &program, std::vector<std::string> args);

/// `tcc inspect ARTIFACT` / `tcc-run inspect ARTIFACT`.
int inspectCommand(const std::string &program, std::vector<std::string> args);

} // namespace tcc::run

#endif // TCC_RUNTIME_RUN_CLI_H
