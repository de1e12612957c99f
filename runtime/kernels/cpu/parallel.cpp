// The CPU backend's persistent worker pool (parallel.h).
#include "kernels/cpu/parallel.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace tcc::cpu {
namespace {

unsigned fpMode() {
#if defined(__x86_64__) || defined(__i386__)
  return _mm_getcsr();
#else
  return 0;
#endif
}

void setFpMode(unsigned mode) {
#if defined(__x86_64__) || defined(__i386__)
  _mm_setcsr(mode);
#else
  (void)mode;
#endif
}

/// Set while this thread runs chunks of a parallel_for: a nested one runs
/// inline (try_lock on a mutex this thread holds would be undefined).
thread_local bool inRegion = false;

class Pool {
public:
  explicit Pool(unsigned threads) {
    for (unsigned t = 1; t < threads; ++t) {
      try {
        workers.emplace_back([this] { work(); });
      } catch (...) { // no more threads to be had: run with fewer
        break;
      }
    }
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(m);
      stop = true;
    }
    wake.notify_all();
    for (std::thread &t : workers)
      t.join();
  }

  unsigned size() const { return unsigned(workers.size()) + 1; }

  /// Runs the chunks of one parallel_for, or returns false when the pool
  /// is busy with another.
  bool run(int64_t n, int64_t chunks, void (*body)(void *, int64_t, int64_t),
           void *ctx) {
    std::unique_lock<std::mutex> region(busy, std::try_to_lock);
    if (!region.owns_lock())
      return false;
    {
      std::lock_guard<std::mutex> lock(m);
      job = {n, chunks, body, ctx, fpMode()};
      next.store(0, std::memory_order_relaxed);
      pending = unsigned(workers.size());
      ++generation;
    }
    wake.notify_all();
    chunksOf(job);
    std::unique_lock<std::mutex> lock(m);
    finished.wait(lock, [&] { return pending == 0; });
    return true;
  }

private:
  struct Job {
    int64_t n = 0, chunks = 0;
    void (*body)(void *, int64_t, int64_t) = nullptr;
    void *ctx = nullptr;
    unsigned mode = 0;
  };

  /// Claims chunks until none is left. Chunk c is [c*n/chunks,
  /// (c+1)*n/chunks) whoever claims it.
  void chunksOf(const Job &j) {
    inRegion = true;
    for (int64_t c; (c = next.fetch_add(1)) < j.chunks;)
      j.body(j.ctx, c * j.n / j.chunks, (c + 1) * j.n / j.chunks);
    inRegion = false;
  }

  void work() {
    uint64_t seen = 0;
    for (;;) {
      Job j;
      {
        std::unique_lock<std::mutex> lock(m);
        wake.wait(lock, [&] { return stop || generation != seen; });
        if (stop)
          return;
        seen = generation;
        j = job;
      }
      unsigned saved = fpMode();
      setFpMode(j.mode);
      chunksOf(j);
      setFpMode(saved);
      std::lock_guard<std::mutex> lock(m);
      if (--pending == 0)
        finished.notify_one();
    }
  }

  std::mutex busy; // held for the whole of one parallel_for
  std::mutex m;    // guards job, pending, generation, stop
  std::condition_variable wake, finished;
  Job job;
  std::atomic<int64_t> next{0};
  unsigned pending = 0;
  uint64_t generation = 0;
  bool stop = false;
  std::vector<std::thread> workers;
};

unsigned configuredThreads() {
  if (const char *env = std::getenv("TCC_CPU_THREADS")) {
    char *endp = nullptr;
    long v = std::strtol(env, &endp, 10);
    if (endp != env && *endp == '\0' && v >= 1 && v <= 64)
      return unsigned(v);
  }
  unsigned hw = std::thread::hardware_concurrency();
  return std::max(1u, std::min(hw == 0 ? 1u : hw, 8u));
}

Pool &pool() {
  static Pool p(configuredThreads());
  return p;
}

} // namespace

unsigned parallel_threads() { return pool().size(); }

void parallel_for(int64_t n, int64_t min_chunk,
                  void (*body)(void *ctx, int64_t begin, int64_t end),
                  void *ctx) {
  if (n <= 0)
    return;
  min_chunk = std::max<int64_t>(1, min_chunk);
  Pool &p = pool();
  // A few chunks per thread, so a thread slowed by another process on its
  // core does not hold up the rest.
  int64_t chunks = std::min<int64_t>(n / min_chunk, int64_t(p.size()) * 4);
  if (p.size() == 1 || chunks < 2 || inRegion || !p.run(n, chunks, body, ctx))
    body(ctx, 0, n);
}

} // namespace tcc::cpu
