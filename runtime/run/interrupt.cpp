#include "run/interrupt.h"

#include <atomic>
#include <unistd.h>

namespace tcc::run {

// Lock-free, so the handler may touch it; any thread may run the handler.
static std::atomic<int> stopSignal{0};
static_assert(std::atomic<int>::is_always_lock_free);
static bool onTerminal = false;

static void onSignal(int signal) {
  if (stopSignal.exchange(signal) != 0) {
    // The second signal: die of it now, as if it had never been handled.
    ::signal(signal, SIG_DFL);
    ::raise(signal);
    return;
  }
  static const char note[] = "\ntcc: stopping after this step (a second "
                             "signal stops at once)\n";
  // The newline ends a live progress line on the terminal (loop.cpp).
  const char *text = onTerminal ? note : note + 1;
  ssize_t ignored = ::write(STDERR_FILENO, text, note + sizeof note - 1 - text);
  (void)ignored;
}

InterruptScope::InterruptScope() {
  stopSignal = 0;
  onTerminal = isatty(STDOUT_FILENO) && isatty(STDERR_FILENO);
  struct sigaction action = {};
  action.sa_handler = onSignal;
  sigemptyset(&action.sa_mask);
  // Reads and waits of the data feed and the checkpoint writer go on.
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &previousInt);
  sigaction(SIGTERM, &action, &previousTerm);
  // A signal the parent ignores (nohup, a background job) stays ignored.
  if (previousInt.sa_handler == SIG_IGN)
    sigaction(SIGINT, &previousInt, nullptr);
  if (previousTerm.sa_handler == SIG_IGN)
    sigaction(SIGTERM, &previousTerm, nullptr);
}

InterruptScope::~InterruptScope() {
  sigaction(SIGINT, &previousInt, nullptr);
  sigaction(SIGTERM, &previousTerm, nullptr);
}

int InterruptScope::received() { return stopSignal; }

const char *signalName(int signal) {
  return signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "signal";
}

} // namespace tcc::run
