// The stage dumps and report rows of `tcc compile`; see StageLog.h.
#include "StageLog.h"
#include "tcc/Support/OutputFile.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace fs = llvm::sys::fs;

namespace tcc::driver {

/// "03-fuse.mlir" and the like: two digits, a dash, a stage name.
static bool isStageDump(llvm::StringRef file) {
  return file.size() > 3 && llvm::isDigit(file[0]) && llvm::isDigit(file[1]) &&
         file[2] == '-' && file.ends_with(".mlir");
}

mlir::LogicalResult StageLog::open(mlir::Location loc,
                                   const std::string &dumpDir) {
  if (dumpDir.empty())
    return mlir::success();
  auto fail = [&] {
    return mlir::emitError(loc) << "--dump-dir '" << dumpDir << "': ";
  };
  if (fs::exists(dumpDir) && !fs::is_directory(dumpDir))
    return fail() << "exists and is not a directory";
  if (std::error_code ec = fs::create_directories(dumpDir))
    return fail() << "cannot create the directory: " << ec.message();
  std::error_code ec;
  for (fs::directory_iterator it(dumpDir, ec), end; it != end && !ec;
       it.increment(ec))
    if (isStageDump(llvm::sys::path::filename(it->path())))
      if (std::error_code removeError = fs::remove(it->path()))
        return fail() << "cannot remove '" << it->path()
                      << "': " << removeError.message();
  if (ec)
    return fail() << "cannot list the directory: " << ec.message();
  dir = dumpDir;
  return mlir::success();
}

mlir::LogicalResult StageLog::record(llvm::StringRef name, llvm::StringRef note,
                                     mlir::ModuleOp module) {
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
  llvm::ToolOutputFile out(path, ec, fs::OF_Text);
  if (!ec) {
    module->print(out.os());
    ec = commitOutput(out);
  }
  if (ec)
    return mlir::emitError(mlir::UnknownLoc::get(module.getContext()))
           << "--dump-dir: cannot write '" << path.str()
           << "': " << ec.message();
  return mlir::success();
}

} // namespace tcc::driver
