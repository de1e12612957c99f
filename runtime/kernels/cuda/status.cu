// Status strings and the device error word of the CUDA library kernels.
#include "kernels/cuda/common.cuh"

#include <climits>

namespace tcc::cuda {

const char *status_string(Status status) {
  return cudaGetErrorString(static_cast<cudaError_t>(status));
}

const char *float_type_name(FloatType type) {
  switch (type) {
  case FloatType::F32:
    return "f32";
  case FloatType::BF16:
    return "bf16";
  case FloatType::F16:
    return "f16";
  }
  return "?";
}

Status set_error_word(int64_t *error, cudaStream_t stream) {
  // All ones is -1 as int64 and the largest value for the atomic min.
  return static_cast<Status>(
      cudaMemsetAsync(error, 0xff, sizeof(int64_t), stream));
}

int64_t read_error_word(const int64_t *error, cudaStream_t stream) {
  int64_t value = 0;
  if (cudaMemcpyAsync(&value, error, sizeof value, cudaMemcpyDeviceToHost,
                      stream) != cudaSuccess ||
      cudaStreamSynchronize(stream) != cudaSuccess)
    return INT64_MIN;
  return value;
}

} // namespace tcc::cuda
