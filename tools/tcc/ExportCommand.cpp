// `tcc export CKPT --to OUT.onnx|.safetensors|.pt`: a checkpoint's trained
// weights for PyTorch, onnxruntime or any ONNX tool. One implementation, in
// the Python package (python/tcc/export.py: ONNX and PyTorch files need
// onnx and torch); this command runs it with the Python the package was
// built for (python/CMakeLists.txt defines where).
#include "Commands.h"

#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace tcc::driver {

int exportCommand(std::vector<std::string> args) {
#ifndef TCC_PYTHON_EXECUTABLE
  (void)args;
  llvm::errs() << "tcc: export: this tcc was built without the Python package "
                  "(it needs the project's .venv: scripts/venv.sh, then "
                  "cmake -DTCC_PYTHON=ON)\n";
  return 1;
#else
#ifdef TCC_PYTHON_PATH
  std::string path = TCC_PYTHON_PATH;
  if (const char *old = std::getenv("PYTHONPATH"); old && *old)
    path += std::string(":") + old;
  setenv("PYTHONPATH", path.c_str(), 1);
#endif
  std::vector<std::string> command = {TCC_PYTHON_EXECUTABLE, "-m", "tcc",
                                      "export"};
  command.insert(command.end(), args.begin(), args.end());
  std::vector<char *> argv;
  for (std::string &arg : command)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  execv(argv[0], argv.data());
  llvm::errs() << "tcc: export: cannot run " << argv[0] << ": "
               << std::strerror(errno) << "\n";
  return 1;
#endif
}

} // namespace tcc::driver
