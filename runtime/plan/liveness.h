//===- liveness.h - data flow and arena liveness of a plan ------*- C++ -*-===//
//
// The arena holds a value from the step that writes it to its last use. A
// value that no step writes but that lives in the arena is an alias (a
// reshape's result shares its operand's bytes): it stands for whatever the
// steps before its first use last wrote into its bytes, and keeps those
// writers' bytes alive as long as it is used.
//
// Ownership is tracked per byte range: a step's outputs take over their
// bytes. Before step s (and before the results are read, as if at a step
// after the last) a byte is held when the value that last wrote it
// (with its aliases) is used at a step >= s or is a function result; every
// other byte is free, and TCC_POISON_ARENA fills it with 0xFF. In a correct
// plan no live value's bytes are ever taken over, so poisoning changes
// nothing; a plan that lets a step overwrite a value that is still to be
// read hands those bytes to the new writer, and once that writer is dead
// they are poisoned and the late reader sees NaNs. (When the overwriting
// value is itself still live, the reader gets its data with or without
// poisoning: that needs a static check of the plan, which the compiler's
// tcc-verify-memory-plan does.)
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_PLAN_LIVENESS_H
#define TCC_RUNTIME_PLAN_LIVENESS_H

#include "plan/plan.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tcc::rt {

struct ByteRange {
  int64_t begin = 0, end = 0;
};

struct Dataflow {
  /// Per value: the step that writes it, or -1.
  std::vector<int64_t> def;
  /// Per arena value: its alias group's representative (a written value);
  /// -1 for values that are neither arena values nor read.
  std::vector<int64_t> group;
  /// Per group representative: the last step that reads the group, or the
  /// number of steps when it is a function result.
  std::vector<int64_t> lastUse;
};

/// Checks that every value is written at most once, read only after it is
/// written, and that every arena byte a step or result reads was written
/// before. `bad` receives one line (naming the step and value) and must not
/// return.
Dataflow analyzeDataflow(const Function &fn,
                         const std::function<void(const std::string &)> &bad);

/// Per step, and once more for reading the results after the last step:
/// the arena byte ranges, within [0, arenaSize), to poison before it (sorted,
/// disjoint, merged). Has steps + 1 entries.
std::vector<std::vector<ByteRange>>
poisonSchedule(const Function &fn, const Dataflow &flow, int64_t arenaSize);

/// Per step (steps + 1 entries, as poisonSchedule): the arena bytes held
/// before it, the bytes poisonSchedule does not free: the function's live
/// arena timeline (`tcc inspect`'s memory chart; its maximum is at most the
/// arena, which also holds the planner's gaps).
std::vector<int64_t> heldArenaBytes(const Function &fn, const Dataflow &flow,
                                    int64_t arenaSize);

/// `timeline` in at most `columns` columns, each the largest entry of its
/// share (column c holds entries [c*n/columns, (c+1)*n/columns)), so a
/// peak survives the sampling. A shorter timeline is returned as it is.
std::vector<int64_t> timelinePeaks(const std::vector<int64_t> &timeline,
                                   size_t columns);

} // namespace tcc::rt

#endif // TCC_RUNTIME_PLAN_LIVENESS_H
