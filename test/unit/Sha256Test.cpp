// SHA-256 against the known answers of FIPS 180-2 (appendix B) and NIST's
// example values, whole and fed in uneven pieces, and of a file.
#include "data/sha256.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

using tcc::data::Sha256;
using tcc::data::sha256Hex;

namespace {

TEST(Sha256, FipsKnownAnswers) {
  EXPECT_EQ(sha256Hex("abc", 3),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two =
      "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(sha256Hex(two.data(), two.size()),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  std::string million(1000000, 'a');
  EXPECT_EQ(sha256Hex(million.data(), million.size()),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_EQ(sha256Hex("", 0),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, PiecesGiveTheSameDigest) {
  // Every split of the 56-byte message, so each padding branch and block
  // boundary is crossed with bytes already buffered.
  const std::string two =
      "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  for (size_t cut = 0; cut <= two.size(); ++cut) {
    Sha256 s;
    s.update(two.data(), cut);
    s.update(two.data() + cut, two.size() - cut);
    EXPECT_EQ(s.hexDigest(),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        << cut;
  }
}

TEST(Sha256, File) {
  std::string path = testutil::tempPath("sha256", "abc");
  std::ofstream(path) << "abc";
  tcc::data::FileDigest d = tcc::data::digestFile(path);
  EXPECT_EQ(d.bytes, 3u);
  EXPECT_EQ(d.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::remove(path.c_str());
  EXPECT_THROW(tcc::data::digestFile(path), std::runtime_error);
}

} // namespace
