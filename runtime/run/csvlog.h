//===- csvlog.h - the --log CSV of a training run ---------------*- C++ -*-===//
//
// A header line, then one row per step whose first field is the step. A
// resumed run continues its log: the rows of steps after the checkpoint it
// resumes (steps a killed run did but did not save, which are done again)
// are cut off and the new rows appended, so the file reads as one run. The
// earlier rows are never rewritten: a crash at any moment loses at most the
// rows being cut.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_RUN_CSVLOG_H
#define TCC_RUNTIME_RUN_CSVLOG_H

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>

namespace tcc::run {

/// A row that could not be written (a full disk, an I/O error): the run
/// stops with this one line rather than leave a log cut mid-row behind.
class LogWriteError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class CsvLog {
public:
  /// Starts the log of a new run at `path` with the header line `columns`
  /// (no newline). A non-empty file there is another run's log: refused
  /// unless `overwrite`, which replaces it.
  bool create(const std::string &path, const std::string &columns,
              bool overwrite, std::string &error);
  /// Continues the log at `path` of a run resumed at `step` (a new log when
  /// there is none); refuses a log with other columns.
  bool resume(const std::string &path, const std::string &columns, int64_t step,
              std::string &error);
  /// Cuts the rows after `step`, for a run gone back to its checkpoint of
  /// that step.
  bool rewind(int64_t step, std::string &error);

  bool isOpen() const { return out.is_open(); }
  /// Appends one row (no newline) and flushes it; throws LogWriteError
  /// ("--log PATH: cannot write: why") when the bytes do not reach the file.
  void row(const std::string &text);

private:
  bool openAppend(std::string &error);

  std::string path, header;
  std::ofstream out;
};

} // namespace tcc::run

#endif // TCC_RUNTIME_RUN_CSVLOG_H
