//===- feed.h - the data feeds of the training loop -------------*- C++ -*-===//
//
// A training or evaluation feed of the loop (loop.cpp): named arrays
// (.npz/.npy) or uint16 token files, prefetched, and under data parallelism
// this rank's block of every global batch.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_RUN_FEED_H
#define TCC_RUNTIME_RUN_FEED_H

#include "run/engine.h"

#include "data/batcher.h"
#include "data/prefetch.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tcc::run {

/// A feed of either kind behind one interface.
struct Feed {
  std::optional<data::Batcher> arrays;
  std::optional<data::TokenBatcher> tokens;
  std::unique_ptr<data::Prefetcher> prefetch;
  /// Data-parallel: this rank's block of `ranks` equal blocks of rows.
  int rank = 0, ranks = 1;
  /// A token file feeding an --accum N artifact: the [N, B, T] shape its
  /// N*B rows take (empty: [B, T] as read).
  std::vector<int64_t> tokenShape;

  data::Prefetcher::Source source() {
    data::Prefetcher::Source s =
        arrays ? data::Prefetcher::of(*arrays) : data::Prefetcher::of(*tokens);
    if (ranks == 1 && tokenShape.empty())
      return s;
    s.next = [next = s.next, r = rank, n = ranks, shape = tokenShape] {
      return block(shaped(next(), shape), r, n);
    };
    return s;
  }
  /// The next global batch, this rank's block of it.
  std::vector<data::Array> next() {
    return block(arrays ? arrays->next() : shaped(tokens->next(), tokenShape),
                 rank, ranks);
  }
  /// `batch` with every array in `shape` (the same elements), when given.
  static std::vector<data::Array> shaped(std::vector<data::Array> batch,
                                         const std::vector<int64_t> &shape) {
    if (!shape.empty())
      for (data::Array &a : batch)
        a.shape = shape;
    return batch;
  }
  /// Rank `r`'s block of `n` equal blocks of the rows of `batch`.
  static std::vector<data::Array> block(std::vector<data::Array> batch, int r,
                                        int n) {
    if (n == 1)
      return batch;
    for (data::Array &a : batch) {
      int64_t rows = a.shape[0] / n;
      size_t rowBytes = a.bytes.size() / size_t(a.shape[0]);
      a.bytes.erase(a.bytes.begin() + size_t(r + 1) * rows * rowBytes,
                    a.bytes.end());
      a.bytes.erase(a.bytes.begin(),
                    a.bytes.begin() + size_t(r) * rows * rowBytes);
      a.shape[0] = rows;
    }
    return batch;
  }
};

/// Opens `path` for `engine`'s batch inputs: a .bin token file (or a
/// pattern of several) needs two int64 [B, T] inputs ([N, B, T] under
/// --accum N: N*B rows a step), one of them the loss's target, and packing documents (`packEot` >= 0, --pack-documents)
/// a third, position_ids; an artifact with position_ids takes a token file
/// only packed. With `ranks` > 1 the feed reads global batches of `ranks`
/// times the rows and hands out rank `rank`'s block of them.
void openFeed(Feed &feed, const std::string &path, const Engine &engine,
              int64_t packEot, int rank = 0, int ranks = 1);

/// Elements of the first integer input of rank >= 2 (tokens per step), or 0.
int64_t tokensPerStep(const std::vector<data::InputSpec> &specs);

} // namespace tcc::run

#endif // TCC_RUNTIME_RUN_FEED_H
