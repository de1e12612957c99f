//===- schedule.h - the learning-rate schedule ------------------*- C++ -*-===//
//
// The learning rate the training step computes from its step counter
// (docs/training.md, "Learning-rate schedules"): nanoGPT's get_lr in double.
// One definition for the runtime (tcc_learning_rate) and the CLI's log.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_PLAN_SCHEDULE_H
#define TCC_RUNTIME_PLAN_SCHEDULE_H

#include <cstdint>

namespace tcc::rt {

struct Schedule {
  enum Kind { Constant, Cosine, Linear } kind = Constant;
  double lr = 0;      ///< the optimizer's base rate
  int64_t warmup = 0; ///< Cosine, Linear
  int64_t total = 0;  ///< Cosine, Linear: > warmup
  double minLr = 0;   ///< Cosine
};

/// The learning rate of step `it` (0-based, the steps done before it):
///   constant: lr
///   it < warmup: lr * (it + 1) / warmup
///   it >= total: min_lr (cosine), 0 (linear)
///   otherwise, with r = (it - warmup) / (total - warmup):
///     cosine: min_lr + 0.5 * (1 + cos(pi * r)) * (lr - min_lr)
///     linear: max(0, lr * (1 - r))
double learningRate(const Schedule &schedule, int64_t it);

/// "constant", "cosine", "linear".
const char *scheduleKindName(Schedule::Kind kind);

} // namespace tcc::rt

#endif // TCC_RUNTIME_PLAN_SCHEDULE_H
