//===- dp_mpi.cpp - the data-parallel module over MPI ---------------------===//
//
// The only file of the runtime that includes mpi.h. A collective step
// starts one MPI_Iallreduce per tensor, in place; the backend lets them
// progress between the steps that follow and waits before a step reads a
// result, polling with MPI_Testall so that a rank that died or hangs ends
// the wait after the timeout instead of blocking forever.
//
//===----------------------------------------------------------------------===//

#include "exec/dp.h"

#include "exec/zero.h"
#include "plan/plan.h"

#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace tcc::rt::dp {

namespace {

MPI_Datatype mpiType(data::DType dtype) {
  switch (dtype) {
  case data::DType::F32:
    return MPI_FLOAT;
  case data::DType::F64:
    return MPI_DOUBLE;
  case data::DType::I32:
    return MPI_INT32_T;
  case data::DType::I64:
    return MPI_INT64_T;
  default:
    fail(TCC_ERROR_BACKEND, "cannot all-reduce " +
                                std::string(data::dtypeName(dtype)) +
                                " over MPI (f32, f64, i32, i64)");
  }
}

template <class T> void divide(uint8_t *buf, int64_t n, int ranks) {
  T *p = reinterpret_cast<T *>(buf);
  for (int64_t i = 0; i < n; ++i)
    p[i] /= T(ranks);
}

class MpiGroup final : public Group {
public:
  MpiGroup(MPI_Comm comm, double timeout) : comm(comm), timeout(timeout) {
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &ranks);
  }
  ~MpiGroup() override {
    // A session closed after an error: the requests are abandoned, as the
    // process is about to end.
  }
  int rank() const override { return me; }
  int size() const override { return ranks; }

  void start(uint8_t *buf, int64_t elements, data::DType dtype, bool mean,
             const std::string &what) override {
    if (ranks == 1)
      return;
    if (elements > INT32_MAX)
      fail(TCC_ERROR_BACKEND, what + ": " + std::to_string(elements) +
                                  " elements, more than one MPI call takes");
    requests.emplace_back();
    items.push_back({buf, elements, dtype, mean, what});
    int rc = MPI_Iallreduce(MPI_IN_PLACE, buf, int(elements), mpiType(dtype),
                            MPI_SUM, comm, &requests.back());
    check(rc, what);
  }

  void startScatter(uint8_t *buf, int64_t elements, data::DType dtype,
                    bool mean, const std::string &what) override {
    if (ranks == 1) {
      start(buf, elements, dtype, mean, what);
      return;
    }
    if (elements > INT32_MAX)
      fail(TCC_ERROR_BACKEND, what + ": " + std::to_string(elements) +
                                  " elements, more than one MPI call takes");
    std::vector<int> c;
    for (int q = 0; q < ranks; ++q)
      c.push_back(int(sliceOf(elements, q, ranks).count));
    requests.emplace_back();
    items.push_back({buf, elements, dtype, mean, what,
                     sliceOf(elements, me, ranks)});
    // In place: the input is the whole of `buf`, this rank's reduced slice
    // lands at its start (waitAll moves it to its place).
    int rc = MPI_Ireduce_scatter(MPI_IN_PLACE, buf, c.data(), mpiType(dtype),
                                 MPI_SUM, comm, &requests.back());
    keep(std::move(c), {});
    check(rc, what);
  }

  void startGather(uint8_t *buf, const std::vector<int64_t> &offsets,
                   const std::vector<int64_t> &counts,
                   const std::string &what) override {
    if (ranks == 1)
      return;
    std::vector<int> c = ints(counts, what), d = ints(offsets, what);
    requests.emplace_back();
    items.push_back({buf, 0, data::DType::U8, false, what});
    int rc = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_BYTE, buf, c.data(),
                             d.data(), MPI_BYTE, comm, &requests.back());
    keep(std::move(c), std::move(d));
    check(rc, what);
  }

  void startGatherToRoot(const uint8_t *mine, uint8_t *all,
                         const std::vector<int64_t> &offsets,
                         const std::vector<int64_t> &counts,
                         const std::string &what) override {
    if (ranks == 1) {
      std::memcpy(all + offsets[0], mine, size_t(counts[0]));
      return;
    }
    std::vector<int> c = ints(counts, what), d = ints(offsets, what);
    requests.emplace_back();
    items.push_back({all, 0, data::DType::U8, false, what});
    // Rank 0 receives its own part in place.
    if (me == 0 && c[0] > 0)
      std::memcpy(all + d[0], mine, size_t(c[0]));
    const void *send = me == 0 ? MPI_IN_PLACE : mine;
    int rc = MPI_Igatherv(send, c[size_t(me)], MPI_BYTE, all, c.data(),
                          d.data(), MPI_BYTE, 0, comm, &requests.back());
    keep(std::move(c), std::move(d));
    check(rc, what);
  }

  void progress() override {
    if (requests.empty())
      return;
    int done = 0;
    MPI_Testall(int(requests.size()), requests.data(), &done,
                MPI_STATUSES_IGNORE);
  }

  bool pending() const override { return !items.empty(); }

  void waitAll() override {
    if (items.empty())
      return;
    using Clock = std::chrono::steady_clock;
    Clock::time_point deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(timeout));
    int done = 0;
    for (int spins = 0;; ++spins) {
      int rc = MPI_Testall(int(requests.size()), requests.data(), &done,
                           MPI_STATUSES_IGNORE);
      check(rc, items.front().what);
      if (done)
        break;
      if (timeout > 0 && Clock::now() > deadline)
        fail(TCC_ERROR_BACKEND,
             "rank " + std::to_string(me) + " of " + std::to_string(ranks) +
                 ": " + items.front().what + " did not finish within the " +
                 "collective timeout of " + std::to_string(int(timeout)) +
                 " s (another rank died or hangs)");
      if (spins > 1000)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    for (const Item &it : items) {
      // A scatter's result: its slice's elements, at the start of `buf`.
      int64_t n = it.slice.count >= 0 ? it.slice.count : it.elements;
      if (it.mean) {
        switch (it.dtype) {
        case data::DType::F32:
          divide<float>(it.buf, n, ranks);
          break;
        case data::DType::F64:
          divide<double>(it.buf, n, ranks);
          break;
        case data::DType::I32:
          divide<int32_t>(it.buf, n, ranks);
          break;
        default:
          divide<int64_t>(it.buf, n, ranks);
        }
      }
      if (it.slice.count >= 0) {
        size_t size = data::dtypeSize(it.dtype);
        size_t first = size_t(it.slice.first) * size;
        size_t bytes = size_t(it.slice.count) * size;
        std::memmove(it.buf + first, it.buf, bytes);
        std::memset(it.buf, 0, first);
        std::memset(it.buf + first + bytes, 0,
                    size_t(it.elements) * size - first - bytes);
      }
    }
    items.clear();
    requests.clear();
    counts.clear();
  }

private:
  struct Item {
    uint8_t *buf;
    int64_t elements;
    data::DType dtype;
    bool mean;
    std::string what;
    /// A scatter's: this rank's slice of the elements (count -1: none).
    Slice slice{0, -1};
  };
  void check(int rc, const std::string &what) {
    if (rc == MPI_SUCCESS)
      return;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    fail(TCC_ERROR_BACKEND, "rank " + std::to_string(me) + ": " + what +
                                ": MPI error: " + std::string(text, len));
  }

  /// `v` as MPI's int counts; TCC_ERROR_BACKEND past INT_MAX bytes.
  std::vector<int> ints(const std::vector<int64_t> &v,
                        const std::string &what) {
    std::vector<int> out;
    for (int64_t x : v) {
      if (x > INT32_MAX)
        fail(TCC_ERROR_BACKEND, what + ": " + std::to_string(x) +
                                    " bytes, more than one MPI call takes");
      out.push_back(int(x));
    }
    return out;
  }
  /// Keeps a started gather's count arrays alive until it completes (MPI
  /// may read them until then).
  void keep(std::vector<int> c, std::vector<int> d) {
    counts.push_back(std::move(c));
    counts.push_back(std::move(d));
  }

  MPI_Comm comm;
  double timeout;
  int me = 0, ranks = 1;
  std::vector<MPI_Request> requests;
  std::vector<Item> items;
  std::vector<std::vector<int>> counts;
};

MPI_Comm worldComm = MPI_COMM_NULL;
bool joined = false;

} // namespace

bool haveMpi() { return true; }

std::unique_ptr<Group> openGroup(void *comm, double timeoutSeconds) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    fail(TCC_ERROR_ARGUMENT, "TCC_COMMUNICATOR_MPI: MPI is not initialized "
                             "(call MPI_Init first)");
  MPI_Comm c = *static_cast<MPI_Comm *>(comm);
  // Errors come back as codes, so that a session reports them.
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  return std::make_unique<MpiGroup>(c, timeoutSeconds);
}

World joinWorld() {
  bool launched = false;
  for (const char *var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    launched = launched || std::getenv(var);
  if (!launched)
    return {};
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) !=
      MPI_SUCCESS)
    throw data::Error("MPI_Init failed");
  joined = true;
  MPI_Comm_dup(MPI_COMM_WORLD, &worldComm);
  World w;
  MPI_Comm_rank(worldComm, &w.rank);
  MPI_Comm_size(worldComm, &w.size);
  w.comm = &worldComm;
  return w;
}

void leaveWorld() {
  if (!joined)
    return;
  MPI_Comm_free(&worldComm);
  MPI_Finalize();
  joined = false;
}

void abortWorld(int status) {
  if (joined)
    MPI_Abort(MPI_COMM_WORLD, status);
  std::exit(status);
}

bool sameOnAllRanks(const std::string &text) {
  if (!joined)
    return true;
  // Compare lengths and bytes with rank 0's.
  uint64_t len = text.size();
  uint64_t root = len;
  MPI_Bcast(&root, 1, MPI_UINT64_T, 0, worldComm);
  std::string theirs = text;
  theirs.resize(root);
  MPI_Bcast(theirs.data(), int(root), MPI_CHAR, 0, worldComm);
  int same = root == len && theirs == text, all = 0;
  MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_LAND, worldComm);
  return all != 0;
}

void broadcastFromRank0(void *buf, size_t bytes) {
  if (joined)
    MPI_Bcast(buf, int(bytes), MPI_BYTE, 0, worldComm);
}

} // namespace tcc::rt::dp
