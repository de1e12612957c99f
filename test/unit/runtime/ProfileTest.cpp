//===- ProfileTest.cpp - tcc_profile_step and the `--profile` report ------===//
//
// tcc_profile_step on the hand-written artifacts of RuntimeTestUtil.h: one
// record per plan step with its kind and name, a real optimizer step (the
// same parameters as tcc_train_step's, bit for bit), step times that add up
// to the step's wall time, and its argument errors. Then the report of
// runtime/run/profile.h on a made-up profile, whose times are exact.
//
//===----------------------------------------------------------------------===//

#include "RuntimeTestUtil.h"

#include "kernels/cpu/cpu_kernels.h"
#include "run/profile.h"

#include <chrono>
#include <sstream>

using namespace rttest;

namespace {

std::vector<tcc_profile_record> profileOrFail(tcc_session *s, double *loss) {
  size_t count = 0;
  EXPECT_EQ(tcc_profile_step(s, nullptr, nullptr, 0, &count), TCC_OK)
      << tcc_last_error();
  std::vector<tcc_profile_record> records(count);
  EXPECT_EQ(tcc_profile_step(s, loss, records.data(), count, &count), TCC_OK)
      << tcc_last_error();
  return records;
}

TEST(Profile, OneRecordPerPlanStepNamedAfterIt) {
  TempDir dir("profile-records");
  linearRegression().write(dir.path);
  tcc_session *s = openOrFail(dir.path);
  ASSERT_TRUE(s);
  bindRegression(s);

  // records NULL: the count only, nothing runs.
  size_t count = 0;
  ASSERT_EQ(tcc_profile_step(s, nullptr, nullptr, 0, &count), TCC_OK)
      << tcc_last_error();
  EXPECT_EQ(count, 9u);
  EXPECT_EQ(tcc_steps_done(s), 0);

  double loss = -1;
  std::vector<tcc_profile_record> records = profileOrFail(s, &loss);
  ASSERT_EQ(records.size(), 9u);
  const char *names[] = {"matmul",         "tcc_bias_sub", "tcc_mean_sq4",
                         "tcc_scale",      "matmul",       "tcc_sum4",
                         "tcc_lr_of_step", "sgd_update",   "sgd_update"};
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i].step, int32_t(i));
    bool call = i == 0 || i == 4 || i >= 7;
    EXPECT_EQ(records[i].kind, call ? TCC_PROFILE_CALL : TCC_PROFILE_KERNEL)
        << i;
    EXPECT_STREQ(records[i].name, names[i]);
    EXPECT_GE(records[i].ms, 0.0) << i;
  }
  EXPECT_EQ(tcc_steps_done(s), 1);
  EXPECT_NEAR(loss, 5.16796875, 1e-6); // mean((x @ w + b - y)^2), by hand
  tcc_session_close(s);
}

TEST(Profile, TrainsExactlyAsTrainStep) {
  TempDir dir("profile-trains");
  linearRegression().write(dir.path);
  tcc_session *plain = openOrFail(dir.path), *profiled = openOrFail(dir.path);
  ASSERT_TRUE(plain && profiled);
  bindRegression(plain);
  bindRegression(profiled);
  for (int t = 0; t < 3; ++t) {
    double a = -1, b = -2;
    ASSERT_EQ(tcc_train_step(plain, &a), TCC_OK) << tcc_last_error();
    if (t == 1)
      profileOrFail(profiled, &b);
    else
      ASSERT_EQ(tcc_train_step(profiled, &b), TCC_OK) << tcc_last_error();
    EXPECT_EQ(a, b) << "step " << t;
  }
  EXPECT_EQ(tcc_steps_done(profiled), 3);
  EXPECT_EQ(readParam<float>(plain, "w", 3), readParam<float>(profiled, "w", 3));
  EXPECT_EQ(readParam<float>(plain, "b", 1), readParam<float>(profiled, "b", 1));
  tcc_session_close(plain);
  tcc_session_close(profiled);
}

/// Two [n, n] GEMMs and a scalar loss: steps long enough that the time
/// between them (the session's own work) is a small part of the step.
TestArtifact twoGemms(int64_t n) {
  TestArtifact a;
  a.plan["params"] = {tensor("w", "f32", {n, n})};
  a.weights = {named("w", testutil::f32({n, n},
                                        std::vector<float>(size_t(n * n), 0.5f)))};
  int64_t bytes = n * n * 4;
  a.fn("train_step") = {
      {"arena_bytes", 2 * bytes + 64},
      {"inputs", {tensor("x", "f32", {n, n})}},
      {"values",
       {slot("input", "f32", {n, n}, 0), slot("param", "f32", {n, n}, 0),
        arena("f32", {n, n}, 0), arena("f32", {n, n}, bytes),
        arena("f32", {}, 2 * bytes)}},
      {"steps",
       {call("matmul", {0, 1}, {2}), call("matmul", {2, 1}, {3}),
        kernel("zero", {}, 4, 1)}},
      {"results", {{{"role", "loss"}, {"value", 4}}}}};
  return a;
}

TEST(Profile, StepTimesAddUpToTheStepsWallTime) {
  TempDir dir("profile-sum");
  twoGemms(384).write(dir.path);
  tcc_session *s = openOrFail(dir.path);
  ASSERT_TRUE(s);
  std::vector<float> x(384 * 384, 0.25f);
  ASSERT_EQ(tcc_bind_input(s, "x", x.data(), x.size() * 4), TCC_OK)
      << tcc_last_error();
  ASSERT_EQ(tcc_train_step(s, nullptr), TCC_OK) << tcc_last_error(); // warm
  std::vector<tcc_profile_record> records(3);
  size_t count = 0;
  auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(tcc_profile_step(s, nullptr, records.data(), 3, &count), TCC_OK)
      << tcc_last_error();
  double wall = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
  ASSERT_EQ(count, 3u);
  double sum = records[0].ms + records[1].ms + records[2].ms;
  EXPECT_LE(sum, wall);
  EXPECT_GE(sum, 0.5 * wall) << "steps " << sum << " ms, step " << wall
                             << " ms";
  EXPECT_GT(records[0].ms, 0.0);
  tcc_session_close(s);
}

TEST(Profile, ArgumentErrorsRunNothing) {
  TempDir dir("profile-errors");
  linearRegression().write(dir.path);
  tcc_session *s = openOrFail(dir.path);
  ASSERT_TRUE(s);
  std::vector<tcc_profile_record> records(9);
  size_t count = 0;
  EXPECT_EQ(tcc_profile_step(s, nullptr, records.data(), 9, &count),
            TCC_ERROR_ARGUMENT);
  EXPECT_STREQ(tcc_last_error(),
               "train_step: input 'x' is not bound (tcc_bind_input)");
  bindRegression(s);
  EXPECT_EQ(tcc_profile_step(s, nullptr, records.data(), 8, &count),
            TCC_ERROR_ARGUMENT);
  EXPECT_STREQ(tcc_last_error(), "tcc_profile_step: capacity 8 is less than "
                                 "train_step's 9 steps");
  EXPECT_EQ(count, 9u);
  EXPECT_EQ(tcc_profile_step(s, nullptr, records.data(), 8, nullptr),
            TCC_ERROR_ARGUMENT);
  EXPECT_STREQ(tcc_last_error(), "tcc_profile_step: count is NULL");
  EXPECT_EQ(tcc_profile_step(nullptr, nullptr, nullptr, 0, &count),
            TCC_ERROR_ARGUMENT);
  EXPECT_EQ(tcc_steps_done(s), 0);
  EXPECT_EQ(readParam<float>(s, "w", 3),
            (std::vector<float>{0.5f, -0.25f, 1.0f}));
  tcc_session_close(s);
}

tcc_profile_record record(int32_t step, tcc_profile_kind kind,
                          const char *name, double ms) {
  return {step, kind, name, ms};
}

TEST(Profile, FamiliesOfOps) {
  using tcc::run::profileFamily;
  EXPECT_EQ(profileFamily(record(0, TCC_PROFILE_KERNEL, "tcc_fused_0", 0)),
            "generated kernels");
  EXPECT_EQ(profileFamily(record(0, TCC_PROFILE_CALL, "gemm", 0)), "GEMM");
  EXPECT_EQ(profileFamily(record(0, TCC_PROFILE_CALL, "matmul", 0)), "GEMM");
  EXPECT_EQ(profileFamily(record(0, TCC_PROFILE_CALL, "attention_grad", 0)),
            "attention");
  EXPECT_EQ(profileFamily(record(0, TCC_PROFILE_CALL, "log_softmax", 0)),
            "softmax");
  EXPECT_EQ(profileFamily(record(0, TCC_PROFILE_CALL, "gather_grad", 0)),
            "embedding");
  EXPECT_EQ(profileFamily(record(0, TCC_PROFILE_CALL, "adamw_update", 0)),
            "optimizer");
  EXPECT_EQ(profileFamily(record(0, TCC_PROFILE_CALL, "new_op", 0)), "new_op");
}

tcc::run::StepProfile madeUpProfile() {
  tcc::run::StepProfile p;
  p.backend = "cpu";
  p.step = 7;
  p.wallMs = 10;
  p.records = {record(0, TCC_PROFILE_CALL, "matmul", 4),
               record(1, TCC_PROFILE_KERNEL, "tcc_fused_0", 0.5),
               record(2, TCC_PROFILE_CALL, "gemm", 2),
               record(3, TCC_PROFILE_KERNEL, "tcc_fused_1", 1.25),
               record(4, TCC_PROFILE_CALL, "adamw_update", 0.25)};
  return p;
}

TEST(Profile, ReportSortsFamiliesAndSteps) {
  std::ostringstream out;
  tcc::run::printProfile(out, madeUpProfile(), 3);
  EXPECT_EQ(out.str(),
            "profile of step 7 (train_step, backend cpu): 5 plan steps, "
            "10.000 ms wall time\n"
            "  family                      ms  % step  count\n"
            "  GEMM                     6.000   60.0%      2\n"
            "  generated kernels        1.750   17.5%      2\n"
            "  optimizer                0.250    2.5%      1\n"
            "  sum of the steps         8.000   80.0%      5\n"
            "  total (wall time)       10.000  100.0%\n"
            "slowest steps\n"
            "   step  kind    name                  ms  % step\n"
            "      0  call    matmul             4.000   40.0%\n"
            "      2  call    gemm               2.000   20.0%\n"
            "      3  kernel  tcc_fused_1        1.250   12.5%\n"
            "  ... 2 more steps, 0.750 ms (7.5%)\n");
}

// Pad-skipping: the steps over packed token rows are summed under the
// families and marked among the slowest.
TEST(Profile, ReportMarksTheStepsOverPackedTokenRows) {
  tcc::run::StepProfile p = madeUpProfile();
  p.records[0].token_rows = 16;
  p.records[3].token_rows = 16;
  std::ostringstream out;
  tcc::run::printProfile(out, p, 3);
  std::string text = out.str();
  EXPECT_NE(text.find("  total (wall time)       10.000  100.0%\n"
                      "  of which over packed token rows: 2 steps, 5.250 ms "
                      "(52.5%)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("      0  call    matmul             4.000   40.0%  "
                      "packed\n"
                      "      2  call    gemm               2.000   20.0%\n"),
            std::string::npos)
      << text;
}

// The backend's notes (tcc_backend_notes: on cuda, which library runs the
// convolutions) go right under the header; the cpu backend's only one says
// which OpenBLAS kernels it chose, when it chose them.
TEST(Profile, ReportPrintsTheBackendNotesUnderTheHeader) {
  tcc::run::StepProfile p = madeUpProfile();
  p.notes = "conv: cuDNN 9.1.0\n";
  std::ostringstream out;
  tcc::run::printProfile(out, p, 1);
  EXPECT_EQ(out.str().substr(0, out.str().find("  GEMM")),
            "profile of step 7 (train_step, backend cpu): 5 plan steps, "
            "10.000 ms wall time\n"
            "conv: cuDNN 9.1.0\n"
            "  family                      ms  % step  count\n");

  TempDir dir("profile-notes");
  linearRegression().write(dir.path);
  tcc_session *s = openOrFail(dir.path);
  ASSERT_TRUE(s);
  // cpu's only note: the OpenBLAS kernels, when tcc chose them.
  EXPECT_EQ(std::string(tcc_backend_notes(s)), tcc::cpu::selectBlasKernels());
  EXPECT_STREQ(tcc_backend_notes(nullptr), "");
  tcc_session_close(s);
}

// The notes in JSON: one string per line, in order.
TEST(Profile, JsonHasTheBackendNotesALineEach) {
  tcc::run::StepProfile p = madeUpProfile();
  p.notes = "conv: cuDNN 9.1.0\nsecond: note\n";
  std::ostringstream out;
  tcc::run::writeProfileJson(out, p);
  json j = json::parse(out.str());
  EXPECT_EQ(j["notes"], json({"conv: cuDNN 9.1.0", "second: note"}));
}

TEST(Profile, ReportOfAShortStepIsInMicroseconds) {
  tcc::run::StepProfile p = madeUpProfile();
  p.wallMs /= 1000;
  for (tcc_profile_record &r : p.records)
    r.ms /= 1000;
  std::ostringstream out;
  tcc::run::printProfile(out, p, 1);
  std::string text = out.str();
  EXPECT_NE(text.find("5 plan steps, 0.010 ms wall time\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("  family                      us  % step  count\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  GEMM                     6.000   60.0%      2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  ... 4 more steps, 4.000 us (40.0%)\n"),
            std::string::npos)
      << text;
}

TEST(Profile, JsonHasStepsInPlanOrderAndFamiliesByTime) {
  std::ostringstream out;
  tcc::run::writeProfileJson(out, madeUpProfile());
  json j = json::parse(out.str());
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_EQ(j["function"], "train_step");
  EXPECT_EQ(j["step"], 7);
  EXPECT_EQ(j["wall_ms"], 10.0);
  EXPECT_EQ(j["steps_ms"], 8.0);
  EXPECT_EQ(j["notes"], json::array()); // the cpu backend has none
  ASSERT_EQ(j["steps"].size(), 5u);
  EXPECT_EQ(j["steps"][3],
            json({{"step", 3}, {"kind", "kernel"}, {"name", "tcc_fused_1"},
                  {"family", "generated kernels"}, {"ms", 1.25},
                  {"token_rows", 0}}));
  ASSERT_EQ(j["families"].size(), 3u);
  EXPECT_EQ(j["families"][0],
            json({{"family", "GEMM"}, {"ms", 6.0}, {"count", 2}}));
  EXPECT_EQ(j["families"][2]["family"], "optimizer");
}

} // namespace
