// tcc_session_options through the C API on the cpu backend: the defaults,
// the struct_size rules (an older, smaller struct; a newer, larger one), the
// refusals, and the allocator hook (every buffer through it, all given back
// at close, the same numbers as without it, a NULL from it a
// TCC_ERROR_MEMORY naming the buffer). The cuda side (device ordinal, user
// stream, device memory from the hook) is test/unit/gpu/
// CudaSessionOptionsTest.cpp.
#include "CountingAllocator.h"
#include "RuntimeTestUtil.h"
#include "WorkingTestArtifact.h"

#include "exec/dp.h"

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

namespace rttest {
namespace {

using Options = tcc_session_options;

constexpr size_t kMandatory = offsetof(Options, backend) + sizeof(char *);

Options defaults() {
  Options o;
  tcc_session_options_init(&o);
  return o;
}

/// Opens `dir` with `o`: the status, with the message in `message`; the
/// session in *out when out is given (else closed).
tcc_status openWith(const std::string &dir, const Options *o,
                    std::string &message, tcc_session **out = nullptr) {
  tcc_session *s = reinterpret_cast<tcc_session *>(&message); // not NULL
  tcc_status st = tcc_session_open(dir.c_str(), o, &s);
  message = st == TCC_OK ? "" : tcc_last_error();
  if (st != TCC_OK)
    EXPECT_EQ(s, nullptr) << "a failed open leaves *out NULL";
  if (out)
    *out = s;
  else
    tcc_session_close(s);
  return st;
}

class SessionOptions : public ::testing::Test {
protected:
  void SetUp() override { linearRegression().write(dir.path); }

  /// The regression trained with `o`; empty when it does not open.
  std::vector<double> trainWith(const Options *o) {
    std::string message;
    tcc_session *s = nullptr;
    EXPECT_EQ(openWith(dir.path, o, message, &s), TCC_OK) << message;
    if (!s)
      return {};
    std::vector<double> out = trainRegression(s);
    tcc_session_close(s);
    return out;
  }

  TempDir dir{"options"};
};

TEST_F(SessionOptions, InitGivesTheDefaults) {
  Options o;
  std::memset(&o, 0x5A, sizeof o);
  tcc_session_options_init(&o);
  EXPECT_EQ(o.struct_size, sizeof(Options));
  EXPECT_EQ(o.backend, nullptr);
  EXPECT_EQ(o.device, 0);
  EXPECT_EQ(o.communicator_kind, TCC_COMMUNICATOR_NONE);
  EXPECT_EQ(o.stream, nullptr);
  EXPECT_EQ(o.allocator.ctx, nullptr);
  EXPECT_EQ(o.allocator.alloc, nullptr);
  EXPECT_EQ(o.allocator.free, nullptr);
  EXPECT_EQ(o.communicator, nullptr);
  EXPECT_EQ(o.collective_timeout_s, 0.0);
  EXPECT_EQ(o.zero_stage, 0);
  tcc_session_options_init(nullptr); // ignored
  // The defaults are NULL options are backend "cpu".
  std::vector<double> byDefault = trainWith(nullptr);
  ASSERT_EQ(byDefault.size(), 9u);
  EXPECT_EQ(trainWith(&o), byDefault);
  o.backend = "cpu";
  EXPECT_EQ(trainWith(&o), byDefault);
}

TEST_F(SessionOptions, ASmallerStructReadsOnlyItsFields) {
  std::vector<double> byDefault = trainWith(nullptr);
  // A caller's struct ending before `stream`: the bytes after it hold
  // values that would be refused on "cpu" were they read.
  Options o = defaults();
  o.struct_size = offsetof(Options, stream);
  o.stream = reinterpret_cast<void *>(0x1);
  o.allocator.alloc =
      reinterpret_cast<decltype(o.allocator.alloc)>(uintptr_t(0x1));
  o.communicator = reinterpret_cast<void *>(0x1);
  EXPECT_EQ(trainWith(&o), byDefault);
  // Only the mandatory fields: the device after them is not read either.
  o.struct_size = kMandatory;
  o.device = 3;
  EXPECT_EQ(trainWith(&o), byDefault);
  // ...but the fields it has are.
  o.backend = "tpu";
  std::string message;
  EXPECT_EQ(openWith(dir.path, &o, message), TCC_ERROR_BACKEND) << message;
}

TEST_F(SessionOptions, BadStructSizesAreRefused) {
  for (size_t size : {size_t(0), sizeof(size_t), kMandatory - 1}) {
    Options o = defaults();
    o.struct_size = size;
    std::string message;
    EXPECT_EQ(openWith(dir.path, &o, message), TCC_ERROR_ARGUMENT);
    EXPECT_EQ(message, "tcc_session_options: struct_size " +
                           std::to_string(size) + " is smaller than the " +
                           std::to_string(kMandatory) +
                           " bytes of its mandatory fields (struct_size, "
                           "backend): initialise it with "
                           "tcc_session_options_init");
  }
  // A newer caller's struct: fields this runtime does not know are fine
  // while they hold their (zero) defaults.
  struct Newer {
    Options known;
    uint64_t later[2];
  } newer;
  std::memset(&newer, 0, sizeof newer);
  newer.known.struct_size = sizeof newer;
  std::vector<double> byDefault = trainWith(nullptr);
  EXPECT_EQ(trainWith(&newer.known), byDefault);
  newer.later[1] = 7;
  std::string message;
  EXPECT_EQ(openWith(dir.path, &newer.known, message), TCC_ERROR_ARGUMENT);
  EXPECT_EQ(message, "tcc_session_options: struct_size " +
                         std::to_string(sizeof newer) +
                         " is larger than this runtime's " +
                         std::to_string(sizeof(Options)) + " bytes and byte " +
                         std::to_string(offsetof(Newer, later) + 8) +
                         " is not zero: an option this runtime does not know "
                         "(built against a newer tcc_runtime.h?)");
}

void *noAlloc(void *, size_t, size_t, tcc_memory_kind) { return nullptr; }
void noFree(void *, void *, size_t, tcc_memory_kind) {}

// Checked before the artifact is read: the directory does not exist.
TEST(SessionOptionsRefusal, NamesTheFieldBeforeReadingTheArtifact) {
  struct Case {
    void (*set)(Options &);
    tcc_status status;
    const char *message;
  } cases[] = {
      {[](Options &o) { o.device = -1; }, TCC_ERROR_ARGUMENT,
       "tcc_session_options: device -1 is negative"},
      {[](Options &o) { o.device = 1; }, TCC_ERROR_ARGUMENT,
       "backend 'cpu' has one device, 0: device 1 does not exist"},
      {[](Options &o) { o.stream = &o; }, TCC_ERROR_ARGUMENT,
       "backend 'cpu' takes no stream (tcc_session_options.stream is a CUDA "
       "stream)"},
      {[](Options &o) { o.allocator.alloc = noAlloc; }, TCC_ERROR_ARGUMENT,
       "tcc_session_options: allocator has alloc but no free: set both, or "
       "neither for the backend's own"},
      {[](Options &o) { o.allocator.free = noFree; }, TCC_ERROR_ARGUMENT,
       "tcc_session_options: allocator has free but no alloc: set both, or "
       "neither for the backend's own"},
      {[](Options &o) { o.communicator = &o; }, TCC_ERROR_ARGUMENT,
       "tcc_session_options: communicator is set but communicator_kind is "
       "TCC_COMMUNICATOR_NONE"},
      {[](Options &o) { o.communicator_kind = TCC_COMMUNICATOR_MPI; },
       TCC_ERROR_ARGUMENT,
       "tcc_session_options: communicator_kind TCC_COMMUNICATOR_MPI needs a "
       "communicator, which is NULL"},
      {[](Options &o) {
         int32_t seven = 7;
         std::memcpy(&o.communicator_kind, &seven, sizeof seven);
         o.communicator = &o;
       },
       TCC_ERROR_ARGUMENT, "tcc_session_options: unknown communicator_kind 7"},
      {[](Options &o) {
         o.communicator_kind = TCC_COMMUNICATOR_NCCL;
         o.communicator = &o;
       },
       TCC_ERROR_ARGUMENT,
       "backend 'cpu' cannot use an NCCL communicator (its collectives go "
       "through MPI)"},
      {[](Options &o) { o.backend = "tpu"; }, TCC_ERROR_BACKEND,
       "backend 'tpu' is not available; this runtime has: cpu"},
      {[](Options &o) { o.collective_timeout_s = -1; }, TCC_ERROR_ARGUMENT,
       "tcc_session_options: collective_timeout_s -1.000000 is negative"},
      {[](Options &o) { o.zero_stage = 2; }, TCC_ERROR_ARGUMENT,
       "tcc_session_options: zero_stage 2 is not 0 or 1 (ZeRO stages 2 and 3 "
       "are not implemented)"},
  };
  for (const Case &c : cases) {
    Options o = defaults();
    c.set(o);
    std::string message;
    EXPECT_EQ(openWith("/nonexistent/artifact.tcc", &o, message), c.status)
        << c.message;
    EXPECT_EQ(message.compare(0, std::strlen(c.message), c.message), 0)
        << message;
  }
}

TEST_F(SessionOptions, AnMpiCommunicatorNeedsMpi) {
  // This process never called MPI_Init: a runtime with MPI refuses the
  // communicator, one without MPI refuses the kind.
  int comm = 0;
  Options o = defaults();
  o.communicator_kind = TCC_COMMUNICATOR_MPI;
  o.communicator = &comm;
  std::string message;
  if (tcc::rt::dp::haveMpi()) {
    EXPECT_EQ(openWith(dir.path, &o, message), TCC_ERROR_ARGUMENT);
    EXPECT_EQ(message, "TCC_COMMUNICATOR_MPI: MPI is not initialized (call "
                       "MPI_Init first)");
  } else {
    EXPECT_EQ(openWith(dir.path, &o, message), TCC_ERROR_BACKEND);
    EXPECT_EQ(message, "TCC_COMMUNICATOR_MPI: this runtime was built without "
                       "MPI (install libopenmpi-dev and rebuild)");
  }
}

TEST_F(SessionOptions, EveryBufferComesFromTheAllocatorHook) {
  std::vector<double> byDefault = trainWith(nullptr);
  CountingAllocator counter;
  Options o = defaults();
  o.allocator = counter.hook();
  std::string message;
  tcc_session *s = nullptr;
  ASSERT_EQ(openWith(dir.path, &o, message, &s), TCC_OK) << message;
  tcc_memory_info mem;
  ASSERT_EQ(tcc_memory(s, &mem), TCC_OK);
  // What tcc_memory counts, plus the int64 step counter: nothing else of
  // this f32 artifact needs a buffer, and none of it bypassed the hook.
  EXPECT_EQ(counter.bytes, size_t(mem.total_bytes) + 8);
  EXPECT_EQ(counter.kinds, std::set<int>{TCC_MEMORY_HOST});
  EXPECT_EQ(counter.alignments, std::set<size_t>{64});
  // The hook's 0xAB bytes never reach a result: optimizer state starts at
  // zero, and the numbers are the same.
  uint32_t momentum = 1;
  ASSERT_EQ(tcc_read_opt_state(s, "b.momentum_buffer", &momentum, 4), TCC_OK);
  EXPECT_EQ(momentum, 0u);
  EXPECT_EQ(trainRegression(s), byDefault);
  EXPECT_EQ(counter.frees, 0);
  tcc_session_close(s);
  EXPECT_TRUE(counter.live.empty()) << counter.live.size() << " not freed";
  EXPECT_EQ(counter.frees, counter.allocs);
  EXPECT_EQ(counter.badFrees, 0);
}

TEST(SessionOptionsHook, WorkingCopiesAndScratchComeFromItToo) {
  TempDir dir("options-working");
  workingArtifact(DType::BF16).write(dir.path);
  auto run = [&](const Options *o, size_t *total) {
    tcc_session *s = nullptr;
    EXPECT_EQ(tcc_session_open(dir.path.c_str(), o, &s), TCC_OK)
        << tcc_last_error();
    if (!s)
      return std::vector<uint16_t>();
    tcc_memory_info mem;
    EXPECT_EQ(tcc_memory(s, &mem), TCC_OK);
    *total = size_t(mem.total_bytes);
    bindWorking(s, DType::BF16);
    double loss;
    EXPECT_EQ(tcc_train_step(s, &loss), TCC_OK) << tcc_last_error();
    std::vector<uint16_t> out = readProbes(s),
                          next = roundedMasters(s, DType::BF16);
    out.insert(out.end(), next.begin(), next.end());
    tcc_session_close(s);
    return out;
  };
  size_t total = 0, hookedTotal = 0;
  std::vector<uint16_t> byDefault = run(nullptr, &total);
  CountingAllocator counter;
  Options o = defaults();
  o.allocator = counter.hook();
  EXPECT_EQ(run(&o, &hookedTotal), byDefault);
  EXPECT_EQ(hookedTotal, total);
  EXPECT_GT(total, 0u);
  // The working copies are in the total; the bf16 matmuls' f32 scratch and
  // the step counter come on top of it.
  EXPECT_GT(counter.bytes, total + 8);
  EXPECT_TRUE(counter.live.empty());
  EXPECT_EQ(counter.frees, counter.allocs);
  EXPECT_EQ(counter.badFrees, 0);
}

TEST_F(SessionOptions, AFailingAllocatorIsAMemoryErrorNamingTheBuffer) {
  CountingAllocator counter;
  Options o = defaults();
  o.allocator = counter.hook();
  std::string message;
  tcc_session *s = nullptr;
  ASSERT_EQ(openWith(dir.path, &o, message, &s), TCC_OK) << message;
  tcc_memory_info mem;
  ASSERT_EQ(tcc_memory(s, &mem), TCC_OK);
  tcc_session_close(s);
  int64_t allocations = counter.allocs;
  ASSERT_GT(allocations, 4);
  // Each allocation of the open failing in turn: a memory error naming the
  // buffer, and everything allocated before it given back.
  std::vector<std::string> messages;
  for (int64_t k = 0; k < allocations; ++k) {
    CountingAllocator failing;
    failing.failAt = k;
    o.allocator = failing.hook();
    EXPECT_EQ(openWith(dir.path, &o, message), TCC_ERROR_MEMORY) << k;
    EXPECT_EQ(message.rfind("cannot allocate ", 0), 0u) << message;
    EXPECT_NE(message.find(": the session's tcc_allocator returned NULL"),
              std::string::npos)
        << message;
    EXPECT_TRUE(failing.live.empty()) << k << ": " << message;
    EXPECT_EQ(failing.badFrees, 0);
    messages.push_back(message);
  }
  auto named = [&](const std::string &m) {
    for (const std::string &x : messages)
      if (x == m)
        return true;
    return false;
  };
  EXPECT_TRUE(named("cannot allocate 12 bytes of host memory for parameter "
                    "'w': the session's tcc_allocator returned NULL"));
  EXPECT_TRUE(named("cannot allocate " + std::to_string(mem.arena_bytes) +
                    " bytes of host memory for the arena: the session's "
                    "tcc_allocator returned NULL"));
}

TEST_F(SessionOptions, AMisalignedAllocatorIsRefused) {
  CountingAllocator counter;
  counter.offset = 8;
  Options o = defaults();
  o.allocator = counter.hook();
  std::string message;
  EXPECT_EQ(openWith(dir.path, &o, message), TCC_ERROR_ARGUMENT);
  EXPECT_EQ(message.rfind("the session's tcc_allocator returned ", 0), 0u)
      << message;
  EXPECT_NE(message.find(" not aligned to 64 bytes"), std::string::npos)
      << message;
  EXPECT_TRUE(counter.live.empty());
  EXPECT_EQ(counter.badFrees, 0);
}

} // namespace
} // namespace rttest
