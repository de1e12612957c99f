// The stage dumps and report rows of `tcc compile`; see StageLog.h.
#include "StageLog.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace fs = llvm::sys::fs;

namespace tcc::driver {

/// "03-fuse.mlir" and the like: two digits, a dash, a stage name.
static bool isStageDump(llvm::StringRef file) {
  return file.size() > 3 && llvm::isDigit(file[0]) && llvm::isDigit(file[1]) &&
         file[2] == '-' && file.ends_with(".mlir");
}

bool StageLog::open(const std::string &dumpDir, std::string &error) {
  if (dumpDir.empty())
    return true;
  std::string where = "--dump-dir '" + dumpDir + "': ";
  if (fs::exists(dumpDir) && !fs::is_directory(dumpDir)) {
    error = where + "exists and is not a directory";
    return false;
  }
  if (std::error_code ec = fs::create_directories(dumpDir)) {
    error = where + "cannot create the directory: " + ec.message();
    return false;
  }
  std::error_code ec;
  for (fs::directory_iterator it(dumpDir, ec), end; it != end && !ec;
       it.increment(ec))
    if (isStageDump(llvm::sys::path::filename(it->path())))
      if (std::error_code removeError = fs::remove(it->path())) {
        error = where + "cannot remove '" + it->path() +
                "': " + removeError.message();
        return false;
      }
  if (ec) {
    error = where + "cannot list the directory: " + ec.message();
    return false;
  }
  dir = dumpDir;
  return true;
}

mlir::LogicalResult StageLog::record(llvm::StringRef name, llvm::StringRef note,
                                     mlir::ModuleOp module,
                                     std::string &error) {
  // The function a stage is about: the step once it exists.
  llvm::StringRef function =
      module.lookupSymbol("train_step") ? "train_step" : "forward";
  rows.push_back({name.str(), "@" + function.str(),
                  report::countFunctionOps(module, function), note.str()});
  unsigned index = next++;
  if (dir.empty())
    return mlir::success();
  std::string number = std::to_string(index);
  if (number.size() < 2)
    number.insert(0, "0");
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, number + "-" + name + ".mlir");
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, fs::OF_Text);
  if (!ec) {
    module->print(out);
    out.close();
    ec = out.error();
  }
  if (ec) {
    error =
        "--dump-dir: cannot write '" + path.str().str() + "': " + ec.message();
    return mlir::failure();
  }
  return mlir::success();
}

} // namespace tcc::driver
