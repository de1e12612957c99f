#include "data/prefetch.h"

namespace tcc::data {

Prefetcher::Prefetcher(Source s, int d)
    : source(std::move(s)), depth(d < 1 ? 1 : size_t(d)) {
  consumerPosition = source.position();
  start();
}

Prefetcher::~Prefetcher() { stop(); }

void Prefetcher::start() {
  stopping = false;
  worker = std::thread([this] { work(); });
}

void Prefetcher::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  changed.notify_all();
  if (worker.joinable())
    worker.join();
}

void Prefetcher::work() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex);
      changed.wait(lock, [&] { return stopping || ready.size() < depth; });
      if (stopping)
        return;
    }
    // The feed is only touched by this thread while it runs.
    Item item;
    try {
      item.batch = source.next();
    } catch (...) {
      item.error = std::current_exception();
    }
    item.positionAfter = source.position();
    bool failed = item.error != nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex);
      ready.push_back(std::move(item));
    }
    changed.notify_all();
    if (failed)
      return; // the consumer rethrows; nothing sensible follows an error
  }
}

std::vector<Array> Prefetcher::next() {
  std::unique_lock<std::mutex> lock(mutex);
  changed.wait(lock, [&] { return !ready.empty(); });
  Item item = std::move(ready.front());
  if (item.error)
    std::rethrow_exception(item.error); // stays queued: the feed is broken
  ready.pop_front();
  consumerPosition = item.positionAfter;
  lock.unlock();
  changed.notify_all();
  return std::move(item.batch);
}

int64_t Prefetcher::position() const {
  std::lock_guard<std::mutex> lock(mutex);
  return consumerPosition;
}

void Prefetcher::seek(int64_t position) {
  stop();
  ready.clear();
  source.seek(position); // may throw: then nothing is running
  consumerPosition = source.position();
  start();
}

} // namespace tcc::data
