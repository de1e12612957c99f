//===- PrefetchTest.cpp - tests for runtime/data/prefetch -----------------===//
//
// A prefetched feed must yield exactly the batches, in the same order and
// with the same positions, as the feed read directly.
//
//===----------------------------------------------------------------------===//

#include "data/batcher.h"
#include "data/prefetch.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

using namespace tcc::data;
using namespace testutil;

namespace {

/// 7 samples x[s] = s (i64), batches of 3: positions 0, 3, 6, 2 (wrapping).
Batcher sevenSamples() {
  std::vector<int64_t> x;
  for (int s = 0; s < 7; ++s)
    x.push_back(s);
  return Batcher({makeArray("x", DType::I64, {7}, x)},
                 {{"x", DType::I64, {3}}}, "seven");
}

std::vector<int64_t> values(const std::vector<Array> &batch) {
  const Array &a = batch.at(0);
  return {a.data<int64_t>(), a.data<int64_t>() + a.numElements()};
}

TEST(Prefetch, SameBatchesAndPositionsAsTheFeed) {
  Batcher direct = sevenSamples(), wrapped = sevenSamples();
  Prefetcher prefetch(Prefetcher::of(wrapped), 2);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(prefetch.position(), direct.position()) << "batch " << i;
    EXPECT_EQ(values(prefetch.next()), values(direct.next())) << "batch " << i;
  }
  EXPECT_EQ(prefetch.position(), direct.position());
}

TEST(Prefetch, FirstBatchesByHand) {
  Batcher feed = sevenSamples();
  Prefetcher prefetch(Prefetcher::of(feed), 3);
  EXPECT_EQ(values(prefetch.next()), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(prefetch.position(), 3);
  EXPECT_EQ(values(prefetch.next()), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(values(prefetch.next()), (std::vector<int64_t>{6, 0, 1}));
  EXPECT_EQ(prefetch.position(), 2);
}

TEST(Prefetch, SeekDropsReadAhead) {
  Batcher feed = sevenSamples();
  Prefetcher prefetch(Prefetcher::of(feed), 2);
  prefetch.next();
  prefetch.seek(5);
  EXPECT_EQ(prefetch.position(), 5);
  EXPECT_EQ(values(prefetch.next()), (std::vector<int64_t>{5, 6, 0}));
  EXPECT_EQ(prefetch.position(), 1);
}

TEST(Prefetch, FeedErrorsReachTheConsumer) {
  int calls = 0;
  Prefetcher::Source source{
      [&]() -> std::vector<Array> {
        if (++calls == 2)
          throw Error("broken.npz: truncated");
        return {makeArray("x", DType::I64, {1}, std::vector<int64_t>{7})};
      },
      [&] { return int64_t(calls); }, [](int64_t) {}};
  Prefetcher prefetch(source, 2);
  EXPECT_EQ(values(prefetch.next()), (std::vector<int64_t>{7}));
  try {
    prefetch.next();
    FAIL() << "expected the feed's error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "broken.npz: truncated");
  }
}

} // namespace
