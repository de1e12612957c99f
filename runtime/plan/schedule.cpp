//===- schedule.cpp - the learning-rate schedule --------------------------===//

#include "plan/schedule.h"

#include <algorithm>
#include <cmath>

namespace tcc::rt {

double learningRate(const Schedule &s, int64_t it) {
  double lr = s.lr;
  if (s.kind == Schedule::Constant)
    return lr;
  if (it < s.warmup)
    return lr * double(it + 1) / double(s.warmup);
  if (it >= s.total)
    return s.kind == Schedule::Cosine ? s.minLr : 0.0;
  double ratio = double(it - s.warmup) / double(s.total - s.warmup);
  if (s.kind == Schedule::Cosine)
    return s.minLr +
           0.5 * (1.0 + std::cos(3.141592653589793 * ratio)) * (lr - s.minLr);
  return std::max(0.0, lr * (1.0 - ratio));
}

const char *scheduleKindName(Schedule::Kind kind) {
  switch (kind) {
  case Schedule::Constant:
    return "constant";
  case Schedule::Cosine:
    return "cosine";
  case Schedule::Linear:
    return "linear";
  }
  return "?";
}

} // namespace tcc::rt
