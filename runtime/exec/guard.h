//===- guard.h - a failure as a status and a message ------------*- C++ -*-===//
//
// Inside the runtime a failure is thrown where it is found: a tcc::rt::Error
// (a tcc_status and one line naming the file, field, step or buffer) from
// runtime/exec, a tcc::data::Error (a line; the libraries below exec do not
// know the C API) from runtime/data and runtime/checkpoint. guarded() is the
// one place where they become the C API's convention, a tcc_status and its
// message: every C API function (session.cpp) and the tools' entry to the
// loader (inspect.cpp) run their body in it, so nothing is thrown past them
// (docs/architecture.md, "Error conventions").
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_GUARD_H
#define TCC_RUNTIME_EXEC_GUARD_H

#include "api/tcc_runtime.h"
#include "data/npz.h"
#include "exec/artifact.h"

#include <exception>
#include <new>
#include <string>

namespace tcc::rt {

/// Runs `f`: TCC_OK, or the status of what it threw with `message` set. A
/// data::Error that reaches here is a malformed file (callers that know
/// better, such as checkpoint I/O, turn it into an Error first); anything
/// else is an internal error.
template <class F> tcc_status guarded(F &&f, std::string &message) {
  try {
    f();
    return TCC_OK;
  } catch (const Error &e) {
    message = e.what();
    return e.status;
  } catch (const data::Error &e) {
    message = e.what();
    return TCC_ERROR_FORMAT;
  } catch (const std::bad_alloc &) {
    message = "out of memory";
    return TCC_ERROR_MEMORY;
  } catch (const std::exception &e) {
    message = std::string("internal error: ") + e.what();
    return TCC_ERROR_FORMAT;
  } catch (...) {
    message = "internal error";
    return TCC_ERROR_FORMAT;
  }
}

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_GUARD_H
