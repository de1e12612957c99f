//===- prefetch.h - batches read ahead on a background thread ---*- C++ -*-===//
//
// Wraps a data feed (Batcher, TokenBatcher, or anything with next(),
// position() and seek()) so the next batches are cut on a background thread
// while the step runs. What the consumer sees is exactly the unwrapped
// feed's sequence: position() is where the consumer's next batch starts, so
// checkpoints record the same data position with or without prefetching.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_DATA_PREFETCH_H
#define TCC_RUNTIME_DATA_PREFETCH_H

#include "data/npz.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tcc::data {

class Prefetcher {
public:
  /// The feed's operations; `next` may throw data::Error, which reaches the
  /// consumer from the matching next() call.
  struct Source {
    std::function<std::vector<Array>()> next;
    std::function<int64_t()> position;
    std::function<void(int64_t)> seek;
  };

  /// Reads up to `depth` (>= 1) batches ahead.
  Prefetcher(Source source, int depth = 2);
  ~Prefetcher();
  Prefetcher(const Prefetcher &) = delete;
  Prefetcher &operator=(const Prefetcher &) = delete;

  /// The next batch, waiting for the background thread if needed.
  std::vector<Array> next();
  /// Where the batch next() returns next starts.
  int64_t position() const;
  /// Drops the read-ahead batches and continues from `position`.
  void seek(int64_t position);

  /// A Source over `feed` (which must outlive the Prefetcher).
  template <class Feed> static Source of(Feed &feed) {
    return {[&feed] { return feed.next(); }, [&feed] { return feed.position(); },
            [&feed](int64_t p) { feed.seek(p); }};
  }

private:
  struct Item {
    std::vector<Array> batch;
    std::exception_ptr error;
    int64_t positionAfter = 0;
  };
  void start();
  void stop();
  void work();

  Source source;
  size_t depth;
  mutable std::mutex mutex;
  std::condition_variable changed;
  std::deque<Item> ready;
  bool stopping = false;
  int64_t consumerPosition = 0;
  std::thread worker;
};

} // namespace tcc::data

#endif // TCC_RUNTIME_DATA_PREFETCH_H
