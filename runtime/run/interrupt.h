//===- interrupt.h - SIGINT and SIGTERM during training ---------*- C++ -*-===//
//
// Ctrl-C, or the SIGTERM a scheduler sends before it takes a (spot) machine
// away, should cost at most the step in flight: while an InterruptScope
// lives, the first of these signals only asks the loop to stop after its
// step (it then saves a checkpoint and exits 128 + the signal, as shells
// expect); a second one ends the process at once, by the signal's default
// action. A checkpoint that a second signal cuts short is a temp directory
// the next save removes (checkpoint.h), never a step-<N>.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_RUN_INTERRUPT_H
#define TCC_RUNTIME_RUN_INTERRUPT_H

#include <signal.h>

namespace tcc::run {

class InterruptScope {
public:
  /// Installs the handlers; the destructor restores the previous ones.
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope &) = delete;
  InterruptScope &operator=(const InterruptScope &) = delete;

  /// The signal that asked to stop (SIGINT or SIGTERM), or 0.
  static int received();

private:
  struct sigaction previousInt, previousTerm;
};

/// "SIGINT", "SIGTERM".
const char *signalName(int signal);

} // namespace tcc::run

#endif // TCC_RUNTIME_RUN_INTERRUPT_H
