//===- options.cpp - reading tcc_session_options --------------------------===//

#include "exec/options.h"

#include "exec/artifact.h"

#include <cstddef>
#include <cstring>

namespace tcc::rt {

namespace {

using Options = tcc_session_options;

// A newer header appends fields after `zero_stage`; were there
// padding after it, such a field could land in bytes a caller of this header
// leaves uninitialised, and the zero check on unknown bytes would misread them.
static_assert(sizeof(Options) ==
                  offsetof(Options, zero_stage) + sizeof(int64_t),
              "tcc_session_options must have no trailing padding");
static_assert(sizeof(tcc_communicator_kind) == sizeof(int32_t),
              "enum fields keep the struct's layout");

constexpr size_t kMandatoryBytes =
    offsetof(Options, backend) + sizeof(const char *);

void refuse(const std::string &message) {
  fail(TCC_ERROR_ARGUMENT, "tcc_session_options: " + message);
}

/// "TCC_COMMUNICATOR_MPI", ...; null for a value that is no kind.
const char *communicatorKindName(int32_t kind) {
  switch (kind) {
  case TCC_COMMUNICATOR_NONE:
    return "TCC_COMMUNICATOR_NONE";
  case TCC_COMMUNICATOR_MPI:
    return "TCC_COMMUNICATOR_MPI";
  case TCC_COMMUNICATOR_NCCL:
    return "TCC_COMMUNICATOR_NCCL";
  }
  return nullptr;
}

} // namespace

SessionOptions readSessionOptions(const tcc_session_options *options) {
  SessionOptions out;
  if (!options)
    return out;
  size_t size = options->struct_size;
  if (size < kMandatoryBytes)
    refuse("struct_size " + std::to_string(size) + " is smaller than the " +
           std::to_string(kMandatoryBytes) +
           " bytes of its mandatory fields (struct_size, backend): "
           "initialise it with tcc_session_options_init");
  if (size > sizeof(Options)) {
    const unsigned char *bytes =
        reinterpret_cast<const unsigned char *>(options);
    for (size_t i = sizeof(Options); i < size; ++i)
      if (bytes[i] != 0)
        refuse("struct_size " + std::to_string(size) +
               " is larger than this runtime's " +
               std::to_string(sizeof(Options)) + " bytes and byte " +
               std::to_string(i) +
               " is not zero: an option this runtime does not know (built "
               "against a newer tcc_runtime.h?)");
  }
  // A field is read only when the caller's struct holds all of it.
  auto has = [&](size_t offset, size_t bytes) {
    return offset + bytes <= size;
  };
  if (options->backend)
    out.backend = options->backend;
  if (has(offsetof(Options, device), sizeof options->device))
    out.device = options->device;
  // Copied as an int: a caller's value need not be an enumerator.
  if (has(offsetof(Options, communicator_kind),
          sizeof options->communicator_kind))
    std::memcpy(&out.communicatorKind, &options->communicator_kind,
                sizeof out.communicatorKind);
  if (has(offsetof(Options, stream), sizeof options->stream))
    out.stream = options->stream;
  if (has(offsetof(Options, allocator), sizeof options->allocator))
    out.allocator = options->allocator;
  if (has(offsetof(Options, communicator), sizeof options->communicator))
    out.communicator = options->communicator;
  if (has(offsetof(Options, collective_timeout_s),
          sizeof options->collective_timeout_s))
    out.collectiveTimeout = options->collective_timeout_s;
  if (has(offsetof(Options, zero_stage), sizeof options->zero_stage))
    out.zeroStage = options->zero_stage;

  if (out.device < 0)
    refuse("device " + std::to_string(out.device) + " is negative");
  if (!out.allocator.alloc != !out.allocator.free)
    refuse(std::string("allocator has ") +
           (out.allocator.alloc ? "alloc but no free" : "free but no alloc") +
           ": set both, or neither for the backend's own");
  const char *kind = communicatorKindName(out.communicatorKind);
  if (!kind)
    refuse("unknown communicator_kind " + std::to_string(out.communicatorKind));
  if (out.communicatorKind == TCC_COMMUNICATOR_NONE && out.communicator)
    refuse("communicator is set but communicator_kind is " + std::string(kind));
  if (out.communicatorKind != TCC_COMMUNICATOR_NONE && !out.communicator)
    refuse("communicator_kind " + std::string(kind) +
           " needs a communicator, which is NULL");
  if (!(out.collectiveTimeout >= 0))
    refuse("collective_timeout_s " + std::to_string(out.collectiveTimeout) +
           " is negative");
  if (out.zeroStage != 0 && out.zeroStage != 1)
    refuse("zero_stage " + std::to_string(out.zeroStage) +
           " is not 0 or 1 (ZeRO stages 2 and 3 are not implemented)");
  return out;
}

} // namespace tcc::rt
