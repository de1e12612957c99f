//===- TensorBoardTest.cpp - tests for runtime/run/tensorboard ------------===//
//
// CRC-32C against its published check value and TFRecord's mask by hand;
// the event file itself is read back in test/lit/Run/metrics.test.
//
//===----------------------------------------------------------------------===//

#include "run/tensorboard.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace tcc::run;

TEST(TensorBoard, Crc32c) {
  // The CRC-32C check value (RFC 3720, appendix B.4: "123456789").
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  // 32 zero bytes: RFC 3720's first test vector.
  unsigned char zeros[32] = {};
  EXPECT_EQ(crc32c(zeros, 32), 0x8A9136AAu);
  // mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8 (mod 2^32).
  uint32_t c = 0xE3069283u;
  EXPECT_EQ(maskedCrc32c("123456789", 9),
            uint32_t(((c >> 15) | (c << 17)) + 0xa282ead8u));
}
