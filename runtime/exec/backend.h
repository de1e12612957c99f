//===- backend.h - where a session's memory lives and steps run -*- C++ -*-===//
//
// A session (session.cpp) owns the artifact and a Backend; the backend owns
// every byte the plan addresses (parameters, optimizer state, the step
// counter, bound inputs, constants, the arena) and runs functions on them.
// Addresses are the backend's own: host pointers for the cpu backend,
// device pointers for cuda. The session never dereferences one; it moves
// bytes in and out with upload / download.
//
// The session allocates everything first, resolves every value of every
// function to an address (Bindings), then calls prepare() once; after that
// run() executes a whole function. What a backend cannot run is refused by
// makeBackend / prepare (TCC_ERROR_BACKEND naming the op and step), never by
// run(). A backend is made for the session's options (options.h): its
// device, the caller's stream, the caller's allocator (allocator.h).
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_BACKEND_H
#define TCC_RUNTIME_EXEC_BACKEND_H

#include "exec/artifact.h"
#include "exec/options.h"
#include "plan/liveness.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tcc::rt {

/// A buffer in the backend's memory (the backend owns it).
struct Mem {
  uint8_t *p = nullptr;
  size_t n = 0;
  uint8_t *data() const { return p; }
  size_t size() const { return n; }
};

/// Every address a function's steps use, resolved when the session opens.
struct FunctionBinding {
  /// Per value: its address.
  std::vector<uint8_t *> ptrs;
  /// Empty, or (TCC_POISON_ARENA=1) per step and once more before the
  /// results are read: arena ranges to fill with 0xFF.
  std::vector<std::vector<ByteRange>> poison;
  /// After the last step: param / opt_state results copied into their slots
  /// (those whose value does not already live there).
  struct Copy {
    uint8_t *dst;
    const uint8_t *src;
    size_t bytes;
  };
  std::vector<Copy> resultCopies;
  /// ZeRO-1 (tcc_session_options.zero_stage): per step, the elements
  /// [first, first + count) of an optimizer update's parameter that this
  /// rank updates, count < 0 for the other steps; empty without ZeRO. The
  /// update's optimizer-state operands and results hold just those
  /// elements, from their first byte; its parameter, gradient and working
  /// copy are whole, and it reads and writes only those elements of them.
  struct Shard {
    int64_t first = 0, count = -1;
  };
  std::vector<Shard> shards;
  /// ZeRO-1: the collective steps reduce-scatter their gradients (Step::
  /// gradients; rank r of N keeps the slice sliceOf(n, r, N) of zero.h and
  /// zeros elsewhere) and sum their scattered_only partial sums. Without
  /// it they all-reduce the gradients and copy the partial sums, which
  /// every rank holds whole.
  bool scatterGradients = false;
};

struct Bindings {
  std::vector<FunctionBinding> functions; ///< as artifact.functions
  uint8_t *arena = nullptr;
  uint8_t *step = nullptr; ///< the int64 step counter
};

class Backend {
public:
  virtual ~Backend() = default;
  Backend(const Backend &) = delete;
  Backend &operator=(const Backend &) = delete;

  /// "cpu", "cuda".
  virtual const char *name() const = 0;

  /// tcc_backend_notes: the library choices made at open, a line each.
  virtual const std::string &notes() const {
    static const std::string none;
    return none;
  }

  /// `bytes` zero-filled bytes for `what`, at least kHostAlignment-aligned,
  /// from the session's allocator, owned by the backend until it is
  /// destroyed; null for 0 bytes. TCC_ERROR_MEMORY naming `what` when the
  /// allocation fails.
  virtual uint8_t *allocate(size_t bytes, const std::string &what) = 0;

  /// Copies host bytes into backend memory / backend memory to the host.
  /// Both complete before returning (download waits for running work).
  virtual void upload(uint8_t *dst, const void *src, size_t bytes) = 0;
  virtual void download(void *dst, const uint8_t *src, size_t bytes) = 0;

  /// Called once, after every buffer is allocated and every value bound.
  /// The bindings must outlive the backend's use of them (the session owns
  /// both).
  virtual void prepare(const Bindings &bindings) = 0;

  /// Runs function `f`: sets the step counter to `step`, poisons and runs
  /// the steps, then copies the results into their slots. When it returns
  /// every result is visible to download. Throws TCC_ERROR_DATA for a label
  /// or id out of range (naming the input and the row) before any
  /// parameter or optimizer state has changed.
  virtual void run(size_t f, int64_t step) = 0;

  /// run(f, step) with every plan step timed, for profiling (`tcc run
  /// --profile`): `ms` receives one time per step of `f`, in milliseconds.
  /// The same results and errors as run(), but not its speed: cpu times
  /// each step with a steady clock; cuda launches the steps one by one (not
  /// as a CUDA graph) between a pair of events each and synchronises.
  virtual void runProfiled(size_t f, int64_t step, std::vector<double> &ms) = 0;

  /// The data-parallel ranks of the session's communicator: this one and
  /// their number (0 of 1 without a communicator).
  virtual int rank() const = 0;
  virtual int ranks() const = 0;

  /// ZeRO-1's exchanges of slices between the ranks (zero_session.h), over
  /// the communicator (cpu: MPI, cuda: NCCL), after the steps run so far.
  /// startGather gathers `buf` (backend memory) in place: rank r holds
  /// bytes [offsets[r], offsets[r] + counts[r]), and every rank holds all
  /// of them once finishExchange() returns. startGatherToRoot sends the
  /// counts[rank()] bytes at `mine` (backend memory) to rank 0, where they
  /// land in host memory at `all` + offsets[rank()] (`all` is used on rank
  /// 0 only) once finishExchange() returns. finishExchange fails
  /// (TCC_ERROR_BACKEND, naming `what`) after the collective timeout.
  virtual void startGather(uint8_t *buf, const std::vector<int64_t> &offsets,
                           const std::vector<int64_t> &counts,
                           const std::string &what) = 0;
  virtual void startGatherToRoot(const uint8_t *mine, uint8_t *all,
                                 const std::vector<int64_t> &offsets,
                                 const std::vector<int64_t> &counts,
                                 const std::string &what) = 0;
  virtual void finishExchange() = 0;

protected:
  Backend() = default;
};

/// The backend options.backend names, for `artifact` (which must outlive
/// it). Errors as checkBackendOptions, and TCC_ERROR_BACKEND for no device
/// or a call the backend cannot run.
std::unique_ptr<Backend> makeBackend(const SessionOptions &options,
                                     const Artifact &artifact);

/// What can be checked before the artifact is read: TCC_ERROR_BACKEND
/// unless this runtime has the backend options.backend names;
/// TCC_ERROR_ARGUMENT for options that backend never takes ("cpu": a
/// device other than 0, a stream, an NCCL communicator).
void checkBackendOptions(const SessionOptions &options);

/// Whether this runtime was built with the CUDA backend.
bool haveCudaBackend();

/// How a session of several ranks combines output i of all_reduce step
/// `step`, `scatter` being FunctionBinding::scatterGradients: the
/// gradients reduce-scattered under ZeRO-1, the partial sums over their
/// slices then all-reduced (without ZeRO-1 they are whole: not at all),
/// everything else all-reduced.
enum class Exchange { None, AllReduce, ReduceScatter };
inline Exchange exchangeOf(const Step &step, size_t i, bool scatter) {
  if (step.scatteredOnly)
    return scatter ? Exchange::AllReduce : Exchange::None;
  if (scatter && int64_t(i) < step.gradients)
    return Exchange::ReduceScatter;
  return Exchange::AllReduce;
}

/// A collective step (all_reduce, reduce_scatter, all_gather) of a session
/// of one rank, the only kind there is until data-parallel training: each
/// output is its input (a sum or mean over one rank is the value itself,
/// and one rank's slice is the whole), moved with `copy(dst, src, bytes)`
/// unless the plan put both in the same bytes. makeBackend refuses plans
/// whose collectives were planned for more ranks.
void runOneRank(
    const Step &step, const Function &fn, uint8_t *const *ptrs,
    const std::function<void(uint8_t *, const uint8_t *, size_t)> &copy);

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_BACKEND_H
