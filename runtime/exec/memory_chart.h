//===- memory_chart.h - `tcc inspect`'s memory timeline ---------*- C++ -*-===//
//
// The live arena bytes of train_step with and without --memory-budget on
// one text chart (issue 16: "the memory timeline before and after on one
// chart"). x: the position in the step (the two plans have different step
// counts, so each is cut into the same number of columns, each the peak of
// its share); y: bytes.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_MEMORY_CHART_H
#define TCC_RUNTIME_EXEC_MEMORY_CHART_H

#include "plan/plan.h"

#include <ostream>

namespace tcc::rt {

/// Prints the chart of `trainStep` (the budgeted plan) against the
/// manifest's unbudgeted timeline; nothing when that timeline is absent.
void printMemoryTimeline(std::ostream &out, const Function &trainStep,
                         const MemoryBudget &budget);

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_MEMORY_CHART_H
