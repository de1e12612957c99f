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

/// Parses `text` as a decimal int64 into `out`; false with "NAME expects an
/// integer, got 'TEXT'" in `error` otherwise.
bool toInt(const std::string &name, const std::string &text, int64_t &out,
           std::string &error);

/// The --help text of the loop's flags.
const char *runFlagsHelp();

/// The flags a --help text documents: the `--name` (or `-n`) that starts
/// each of its lines after the indent. The help is the one list of a
/// command's flags, so the unknown-flag message suggests from it.
std::vector<std::string> flagsInHelp(const std::string &help);

/// The entry of `known` closest to `name` (dashes aside) when one is a few
/// edits from it (at most 2, or a third of its length); "" when none is.
std::string closestName(const std::string &name,
                        const std::vector<std::string> &known);

/// The message for a command-line argument `arg` that is not one of
/// `known`: "unknown flag '--precison'; did you mean '--precision'?" when
/// a flag is close to it (closestName), "flag '--resume' takes no value,
/// got '--resume=1'", else "unknown flag '--x' (see --help)".
std::string unknownFlagMessage(const std::string &arg,
                               const std::vector<std::string> &known);

/// `tcc run ARTIFACT [flags]` / `tcc-run ARTIFACT [flags]`; `args` excludes
/// the program and command names. `program` prefixes messages ("run" in
/// the tcc driver, "tcc-run"); the usage line names the command as typed.
int runCommand(const std::string &program, std::vector<std::string> args);

/// `tcc inspect ARTIFACT` / `tcc-run inspect ARTIFACT`.
int inspectCommand(const std::string &program, std::vector<std::string> args);

} // namespace tcc::run

#endif // TCC_RUNTIME_RUN_CLI_H
