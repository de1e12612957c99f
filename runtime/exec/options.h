//===- options.h - tcc_session_options as the runtime reads -*- C++ -*-===//
//
// tcc_session_open takes a tcc_session_options of whatever struct_size the
// caller was compiled with (the ABI rules are in runtime/api/tcc_runtime.h).
// readSessionOptions turns it into a SessionOptions once, so nothing past the
// C API ever looks at struct_size; backend-specific rules are checked by
// checkBackendOptions (backend.h) and the backends themselves.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_OPTIONS_H
#define TCC_RUNTIME_EXEC_OPTIONS_H

#include "api/tcc_runtime.h"

#include <cstdint>
#include <string>

namespace tcc::rt {

/// A session's options, every field present (the defaults where the
/// caller's struct ended).
struct SessionOptions {
  std::string backend = "cpu";
  int32_t device = 0;
  /// A cudaStream_t of the caller's, or null (the backend makes its own).
  void *stream = nullptr;
  /// alloc and free both null: the backend's own allocator.
  tcc_allocator allocator = {nullptr, nullptr, nullptr};
  /// A tcc_communicator_kind.
  int32_t communicatorKind = TCC_COMMUNICATOR_NONE;
  /// The data-parallel group (an MPI_Comm *, or an ncclComm_t).
  void *communicator = nullptr;
  /// Seconds a collective may wait for the other ranks; 0: forever.
  double collectiveTimeout = 0;
  /// 0, or 1: the optimizer state sharded over the ranks (ZeRO-1).
  int64_t zeroStage = 0;
};

/// `options` (null: the defaults) read within its struct_size.
/// TCC_ERROR_ARGUMENT, naming the field, for a struct_size below the
/// mandatory prefix, unknown non-zero bytes past this runtime's struct, a
/// negative device, half an allocator, or an inconsistent communicator.
SessionOptions readSessionOptions(const tcc_session_options *options);

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_OPTIONS_H
