//===- session_state.h - what a tcc_session holds -------------*- C++ -*-===//
//
// The C API's session (api/tcc_runtime.h) as session.cpp and
// session_checkpoint.cpp share it: the artifact, the backend and the
// buffers it holds, the bindings of every function's values, and the few
// helpers both files call. Not part of the API: the struct stays opaque to
// callers.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_SESSION_STATE_H
#define TCC_RUNTIME_EXEC_SESSION_STATE_H

#include "api/tcc_runtime.h"
#include "exec/artifact.h"
#include "exec/backend.h"
#include "exec/guard.h"
#include "exec/options.h"
#include "exec/zero_session.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct tcc_session {
  tcc::rt::SessionOptions options;
  tcc::rt::Artifact art;
  std::unique_ptr<tcc::rt::Backend> backend;
  std::vector<tcc::rt::Mem> params, optState, inputs, constants;
  /// [param] its working copy (plan params[i].working); empty when none.
  std::vector<tcc::rt::Mem> working;
  std::vector<bool> bound;
  tcc::rt::Mem arena, step;
  int64_t stepsDone = 0;
  /// [function] -> every value's address, poison ranges, result copies.
  tcc::rt::Bindings bindings;
  /// [function][function input] -> session input.
  std::vector<std::vector<size_t>> inputOf;
  /// Input shapes as the data feed yields them (accum merged).
  std::vector<std::vector<int64_t>> feedShapes;
  std::string labelInput;
  /// The loss's ignore_index (tcc_label_ignore_index).
  int64_t labelIgnoreIndex = -100;
  std::string written, restoredFrom;
  /// Inference: forward's outputs (name, dtype, shape) and their results.
  std::vector<tcc::rt::TensorDesc> outputs;
  std::vector<int64_t> outputValues;
  /// Host copies of outputs that are not arena values (an input, parameter
  /// or constant passed through), taken by tcc_forward; empty for the
  /// others, which are read from the arena.
  std::vector<std::vector<uint8_t>> outputCopies;
  bool forwardDone = false;
  /// Training: the metrics of train_step and eval_step (plan role
  /// "metric"), each with its value from the last step that returned it.
  std::vector<std::string> metricNames;
  std::vector<double> metricValues;
  /// ZeRO-1 (options.zeroStage with a communicator): this rank's shards;
  /// null without.
  std::unique_ptr<tcc::rt::ZeroShards> zero;

  tcc::rt::Mem alloc(size_t bytes, const std::string &what) {
    return {backend->allocate(bytes, what), bytes};
  }
  const std::vector<uint8_t *> &ptrs(size_t f) const {
    return bindings.functions[f].ptrs;
  }

  size_t fnIndex(const char *name) const {
    for (size_t f = 0; f < art.functions.size(); ++f)
      if (art.functions[f].name == name)
        return f;
    return art.functions.size();
  }
};

namespace tcc::rt::session {

/// This thread's tcc_last_error() text.
std::string &lastError();

/// Runs `f`, turning any exception into a status and tcc_last_error().
template <class F> tcc_status guard(F &&f) { return guarded(f, lastError()); }

/// "f32 [2, 3]": a tensor's dtype and shape, for messages.
std::string describe(const TensorDesc &t);

/// Refuses `call` (a training function) on a null or inference session.
void needTraining(const tcc_session *s, const char *call);

/// Optimizer state i as this session holds it: all of it, or this rank's
/// slice.
Slice heldState(const tcc_session &s, size_t i);

/// Parameter i's working copy, when it has one, from `master`: the
/// parameter's f32 bytes on the host, each element rounded to nearest even.
void refreshWorking(tcc_session &s, size_t i, const void *master);

} // namespace tcc::rt::session

#endif // TCC_RUNTIME_EXEC_SESSION_STATE_H
