// The training loop (runtime/run/loop.cpp) reports what an engine step
// throws unexpectedly as one `tcc:` line and exit status 1, as it reports
// every other failure, instead of letting it end the process.
#include "RuntimeTestUtil.h"

#include "data/npz.h"
#include "run/loop.h"

#include <new>
#include <sstream>
#include <stdexcept>

namespace rttest {
namespace {

/// One f32 input "x" [2, 3]; every step throws what `thrower` throws.
class ThrowingEngine : public tcc::run::Engine {
public:
  explicit ThrowingEngine(void (*thrower)()) : thrower(thrower) {
    specs.push_back({"x", DType::F32, {2, 3}});
  }
  const std::vector<tcc::data::InputSpec> &batchSpecs() const override {
    return specs;
  }
  std::string tokenTarget() const override { return ""; }
  bool step(std::vector<Array>, double &, std::string &) override {
    thrower();
    return true;
  }
  bool evalLoss(std::vector<Array>, double &, std::string &) override {
    return true;
  }
  int64_t stepsDone() const override { return 0; }
  double learningRate(int64_t) const override { return 0; }
  bool findNonFinite(std::string &name, std::string &) const override {
    name.clear();
    return true;
  }
  bool saveCheckpoint(const std::string &, int64_t, const nlohmann::json &,
                      std::string &, std::string &) override {
    return true;
  }
  bool restoreCheckpoint(const std::string &, int64_t &, std::string &,
                         std::string &) override {
    return true;
  }

private:
  void (*thrower)();
  std::vector<tcc::data::InputSpec> specs;
};

/// runTraining's exit status, with what it wrote to stderr in `err`.
int runWith(void (*thrower)(), std::string &err) {
  TempDir dir("loop-errors");
  tcc::data::writeNpz(
      dir / "data.npz",
      {named("x", testutil::f32({4, 3}, std::vector<float>(12)))});
  ThrowingEngine engine(thrower);
  tcc::run::RunOptions options;
  options.data = dir / "data.npz";
  options.steps = 1;
  options.stepsGiven = true;
  options.progress = "none";
  std::ostringstream out, errors;
  int status = tcc::run::runTraining(engine, options, out, errors);
  err = errors.str();
  return status;
}

TEST(LoopErrors, AnUnexpectedExceptionIsOneLine) {
  std::string err;
  EXPECT_EQ(runWith([] { throw std::bad_alloc(); }, err), 1);
  EXPECT_NE(err.find("tcc: out of memory\n"), std::string::npos) << err;
  EXPECT_EQ(runWith([] { throw std::logic_error("boom"); }, err), 1);
  EXPECT_NE(err.find("tcc: internal error: boom\n"), std::string::npos) << err;
}

} // namespace
} // namespace rttest
