//===- memory_chart.cpp - `tcc inspect`'s memory timeline -----------------===//

#include "exec/memory_chart.h"

#include "plan/liveness.h"

#include <algorithm>
#include <string>

namespace tcc::rt {

namespace {

constexpr int kRows = 8;

/// Whether a column of `bytes` reaches row `row` (1 = the bottom) of a
/// chart whose top row is `top` bytes: the cell is filled when the value
/// is at least the middle of the row's band.
bool reaches(int64_t bytes, int row, int64_t top) {
  return 2 * bytes * kRows >= (2 * row - 1) * top;
}

} // namespace

void printMemoryTimeline(std::ostream &out, const Function &trainStep,
                         const MemoryBudget &budget) {
  const std::vector<int64_t> &before = budget.arenaTimelineUnbudgeted;
  if (before.empty())
    return;
  Dataflow flow = analyzeDataflow(
      trainStep, [](const std::string &why) { fail(TCC_ERROR_FORMAT, why); });
  std::vector<int64_t> after = timelinePeaks(
      heldArenaBytes(trainStep, flow, trainStep.arenaBytes), kTimelineColumns);
  int64_t top = 1;
  for (int64_t b : before)
    top = std::max(top, b);
  for (int64_t b : after)
    top = std::max(top, b);
  int64_t peakAfter = *std::max_element(after.begin(), after.end());
  int64_t peakBefore = *std::max_element(before.begin(), before.end());
  out << "  live arena bytes of train_step, first step to last ('#' with "
         "the budget, peak "
      << groupedDigits(peakAfter) << "; ':' without it, peak " << groupedDigits(peakBefore)
      << ")\n";
  std::string label = groupedDigits(top);
  size_t width = label.size();
  size_t columns = std::max(before.size(), after.size());
  // Column c of each timeline at the same fraction of its step.
  auto at = [&](const std::vector<int64_t> &t, size_t c) {
    return t[c * t.size() / columns];
  };
  for (int row = kRows; row >= 1; --row) {
    std::string axis = row == kRows ? label : std::string();
    out << "  " << std::string(width - axis.size(), ' ') << axis << " |";
    for (size_t c = 0; c < columns; ++c)
      out << (reaches(at(after, c), row, top)    ? '#'
              : reaches(at(before, c), row, top) ? ':'
                                                 : ' ');
    out << "\n";
  }
  out << "  " << std::string(width - 1, ' ') << "0 +"
      << std::string(columns, '-') << "\n";
}

} // namespace tcc::rt
