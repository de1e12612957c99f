// The tcc driver: one binary, one subcommand per user task, all of them in
// one table (`commands` below): adding a subcommand is one row.
#include "Commands.h"
#include "Model.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include "run/cli.h"

#include <algorithm>
#include <string>
#include <vector>

namespace cl = llvm::cl;
using namespace tcc::driver;

namespace {

int runArtifact(std::vector<std::string> args) {
  return tcc::run::runCommand("run", std::move(args));
}
int inspectArtifact(std::vector<std::string> args) {
  return tcc::run::inspectCommand("inspect", std::move(args));
}

/// One tcc subcommand. A command with LLVM flags declares a cl::SubCommand
/// of the same name in its file and runs (`run`) after LLVM's parser; one
/// that parses its own flags (the runtime's) gets the arguments after its
/// name (`parse`).
struct Command {
  llvm::StringLiteral name;
  /// What follows `tcc NAME` in a typical use: the usage line of its help.
  const char *synopsis;
  /// One line in `tcc --help`.
  const char *summary;
  int (*run)() = nullptr;
  int (*parse)(std::vector<std::string>) = nullptr;
  /// Also takes the training loop's flags (tcc run's), which the runtime's
  /// parser takes out of the arguments before LLVM's sees them.
  bool loopFlags = false;
};

const Command commands[] = {
    {"import", "MODEL.onnx -o MODEL.mlir", "convert an ONNX model to tcc IR",
     runImport},
    {"eval", "MODEL --inputs in.npz",
     "run the forward pass in the reference interpreter", runEval},
    {"compile", "MODEL --loss L --optimizer O -o OUT.tcc",
     "compile the training step (or the forward pass) to an artifact",
     runCompile},
    {"train", "MODEL --loss L --data D.npz --steps N",
     "compile and train in one command (compile -o + run)", runTrain, nullptr,
     /*loopFlags=*/true},
    {"run", "OUT.tcc --data D.npz --steps N",
     "train a compiled artifact (the same as tcc-run)", nullptr, runArtifact},
    {"inspect", "OUT.tcc",
     "print an artifact's inputs, parameters, kernels and memory plan", nullptr,
     inspectArtifact},
    {"generate", "GEN.tcc --checkpoint DIR --prompt-tokens 1,2,3",
     "continue a token sequence with a language model's inference artifact",
     nullptr, generateCommand},
    {"plot", "LOG.csv -o CURVES.html",
     "draw a run's loss, eval loss and learning-rate curves", nullptr,
     plotCommand},
    {"export", "CKPT_DIR --to OUT.onnx|OUT.safetensors|OUT.pt [--model M.onnx]",
     "write a checkpoint's trained weights as ONNX, safetensors or .pt",
     nullptr, exportCommand},
};

void printHelp() {
  llvm::outs() << "tcc: ahead-of-time compiler for deep-learning training "
                  "graphs\n\nusage: tcc COMMAND [flags]\n\ncommands:\n";
  for (const Command &c : commands)
    llvm::outs() << "  " << llvm::left_justify(c.name, 10) << c.summary << "\n";
  llvm::outs() << "\nRun 'tcc COMMAND --help' for a command's usage and "
                  "flags.\n";
}

/// `tcc NAME --help` for a command with LLVM flags, in the form of the
/// runtime commands' help: "usage: tcc NAME SYNOPSIS [flags]", the
/// command's description, then its flags (LLVM's own help would start with
/// OVERVIEW and SUBCOMMAND lines and put its USAGE line after the
/// description, which for `tcc train` is the loop's flags).
void printCommandHelp(const Command &command, cl::SubCommand &sub) {
  llvm::outs() << "usage: tcc " << command.name << " " << command.synopsis
               << " [flags]\n\n"
               << sub.getDescription() << "\n\nflags:\n";
  std::vector<cl::Option *> flags;
  for (auto &[name, option] : cl::getRegisteredOptions(sub))
    if (option->getOptionHiddenFlag() == cl::NotHidden &&
        llvm::is_contained(option->Categories, &flagCategory()) &&
        !llvm::is_contained(flags, option))
      flags.push_back(option);
  llvm::sort(flags, [](cl::Option *a, cl::Option *b) {
    return a->ArgStr < b->ArgStr;
  });
  size_t width = 0;
  for (cl::Option *o : flags)
    width = std::max(width, o->getOptionWidth());
  for (cl::Option *o : flags)
    o->printOptionInfo(width);
}

/// A flag as typed: -o, --loss.
std::string dashed(llvm::StringRef name) {
  return (name.size() == 1 ? "-" : "--") + name.str();
}

/// Checks `args` (after the command name) against the flags of `sub` and
/// `extra` before LLVM's parser, which reports an unknown flag in three
/// lines and then its value as one positional argument too many. Returns
/// the one-line message for the first argument that is wrong, or "".
std::string checkArguments(cl::SubCommand &sub,
                           llvm::ArrayRef<std::string> args,
                           const std::vector<std::string> &extra) {
  auto options = cl::getRegisteredOptions(sub);
  std::vector<std::string> documented = extra;
  documented.push_back("--help");
  for (auto &[name, option] : options)
    if (option->getOptionHiddenFlag() == cl::NotHidden &&
        llvm::is_contained(option->Categories, &flagCategory()))
      documented.push_back(dashed(name));
  llvm::sort(documented); // a tie goes to the same flag every time
  size_t maxPositionals = 0;
  for (cl::Option *p : sub.PositionalOpts)
    maxPositionals += p->getNumOccurrencesFlag() == cl::ZeroOrMore ||
                              p->getNumOccurrencesFlag() == cl::OneOrMore
                          ? args.size()
                          : 1;
  std::vector<std::string> positionals;
  for (size_t i = 0; i < args.size(); ++i) {
    llvm::StringRef arg = args[i];
    if (arg == "--") {
      positionals.insert(positionals.end(), args.begin() + i + 1, args.end());
      break;
    }
    if (arg.size() < 2 || !arg.starts_with("-")) {
      positionals.push_back(arg.str());
      continue;
    }
    llvm::StringRef name =
        arg.drop_while([](char c) { return c == '-'; }).split('=').first;
    auto found = options.find(name);
    if (found == options.end()) {
      if (name == "help" || name == "h" || name == "help-hidden")
        continue;
      return tcc::run::unknownFlagMessage(arg.str(), documented);
    }
    // The next argument is this flag's value, whatever it looks like.
    if (!arg.contains('=') &&
        found->second->getValueExpectedFlag() == cl::ValueRequired)
      ++i;
  }
  if (positionals.size() > maxPositionals)
    return "unexpected argument '" + positionals[maxPositionals] + "'" +
           (maxPositionals ? " after '" + positionals[maxPositionals - 1] + "'"
                           : std::string()) +
           " (see --help)";
  return "";
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    llvm::errs() << "tcc: no command given; run 'tcc --help'\n";
    return 1;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    printHelp();
    return 0;
  }
  if (args[0] == "--version") {
    llvm::outs() << "tcc " TCC_VERSION " (LLVM/MLIR " LLVM_VERSION_STRING ")\n";
    return 0;
  }
  const Command *command = llvm::find_if(
      commands, [&](const Command &c) { return c.name == args[0]; });
  if (command == std::end(commands)) {
    std::vector<std::string> names;
    for (const Command &c : commands)
      names.push_back(c.name.str());
    if (llvm::StringRef(args[0]).starts_with("-")) {
      llvm::errs() << "tcc: unknown flag '" << args[0]
                   << "' before the command (tcc COMMAND [flags]; see 'tcc "
                      "--help')\n";
      return 1;
    }
    std::string best = tcc::run::closestName(args[0], names);
    llvm::errs() << "tcc: unknown command '" << args[0] << "'"
                 << (best.empty() ? std::string(" (see 'tcc --help')")
                                  : "; did you mean '" + best + "'?")
                 << "\n";
    return 1;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (command->parse)
    return command->parse(std::move(rest));

  std::vector<std::string> extra;
  std::vector<char *> kept(argv, argv + argc);
  if (command->loopFlags) {
    std::string error;
    if (!tcc::run::parseRunFlags(rest, trainRunOptions(), error)) {
      llvm::errs() << "tcc: " << command->name << ": " << error << "\n";
      return 1;
    }
    extra = tcc::run::flagsInHelp(tcc::run::runFlagsHelp());
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
  for (cl::SubCommand *sub : cl::getRegisteredSubcommands())
    if (sub->getName() == command->name) {
      for (const std::string &arg : rest) {
        if (arg == "--")
          break;
        if (arg == "--help" || arg == "-help" || arg == "-h") {
          printCommandHelp(*command, *sub);
          return 0;
        }
      }
      std::string message = checkArguments(*sub, rest, extra);
      if (!message.empty()) {
        llvm::errs() << "tcc: " << command->name << ": " << message << "\n";
        return 1;
      }
    }
  cl::HideUnrelatedOptions(flagCategory());
  std::string overview =
      ("tcc " + command->name + " " + command->synopsis).str();
  cl::ParseCommandLineOptions(argc, argv, overview);
  return command->run();
}
