// Finishing a file the compiler writes through llvm::ToolOutputFile (the
// IR, the report, --dump-dir stages): a failed write, such as a full disk,
// becomes the caller's one error line and the partial file is removed,
// instead of raw_fd_ostream's "LLVM ERROR: IO failure on output stream"
// abort when the stream is destroyed.
#ifndef TCC_SUPPORT_OUTPUTFILE_H
#define TCC_SUPPORT_OUTPUTFILE_H

#include "llvm/Support/ToolOutputFile.h"

#include <system_error>

namespace tcc {

/// Flushes and closes `out`; keeps the file if every write succeeded and
/// returns that write's error otherwise (the file is then deleted).
inline std::error_code commitOutput(llvm::ToolOutputFile &out) {
  out.os().close();
  std::error_code ec = out.os().error();
  if (ec) {
    out.os().clear_error();
    return ec;
  }
  out.keep();
  return {};
}

} // namespace tcc

#endif // TCC_SUPPORT_OUTPUTFILE_H
