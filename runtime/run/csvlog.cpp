#include "run/csvlog.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace fs = std::filesystem;

namespace tcc::run {

static std::string cannotWrite(const std::string &path) {
  return "--log " + path + ": cannot open for writing" +
         (errno ? std::string(": ") + std::strerror(errno) : "");
}

bool CsvLog::create(const std::string &logPath, const std::string &columns,
                    bool overwrite, std::string &error) {
  path = logPath;
  header = columns;
  std::error_code ec;
  if (!overwrite && fs::is_regular_file(path, ec) && fs::file_size(path, ec)) {
    error = "--log " + path +
            ": exists (another run's log); --resume appends to it, "
            "--overwrite replaces it";
    return false;
  }
  errno = 0;
  out.open(path, std::ios::trunc);
  if (!out) {
    error = cannotWrite(path);
    return false;
  }
  row(header);
  return true;
}

bool CsvLog::resume(const std::string &logPath, const std::string &columns,
                    int64_t step, std::string &error) {
  std::ifstream old(logPath);
  std::string first;
  if (!old || !std::getline(old, first) || first.empty())
    return create(logPath, columns, /*overwrite=*/true, error);
  path = logPath;
  header = columns;
  if (first != header) {
    error = "--log " + path + ": its columns '" + first +
            "' are not this run's '" + header + "'";
    return false;
  }
  old.close();
  return rewind(step, error);
}

bool CsvLog::rewind(int64_t step, std::string &error) {
  out.close();
  std::ifstream in(path, std::ios::binary);
  std::string line;
  std::streamoff keep = 0;
  // The header, then the rows up to `step`; a last line without its newline
  // was cut short by a kill.
  for (bool header = true; std::getline(in, line) && !in.eof();
       header = false) {
    long long rowStep;
    if (!header && std::sscanf(line.c_str(), "%lld,", &rowStep) == 1 &&
        rowStep > step)
      break;
    keep += std::streamoff(line.size()) + 1;
  }
  in.close();
  std::error_code ec;
  fs::resize_file(path, std::uintmax_t(keep), ec);
  if (ec) {
    error = "--log " + path + ": cannot cut the rows after step " +
            std::to_string(step) + ": " + ec.message();
    return false;
  }
  if (!openAppend(error))
    return false;
  if (keep == 0)
    row(header);
  return true;
}

bool CsvLog::openAppend(std::string &error) {
  errno = 0;
  out.open(path, std::ios::app);
  if (!out) {
    error = cannotWrite(path);
    return false;
  }
  return true;
}

void CsvLog::row(const std::string &text) {
  errno = 0;
  out << text << "\n";
  out.flush();
  if (!out)
    throw LogWriteError(
        "--log " + path + ": cannot write" +
        (errno ? std::string(": ") + std::strerror(errno) : std::string()));
}

} // namespace tcc::run
