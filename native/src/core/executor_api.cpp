// The executor entry points of the C ABI that every backend shares: create one for an io
// backend, ask its thread count, close it. The vendor entry points
// (executors on a device and stream, launch settings) are in the backend folders.
#include "entry.hpp"

using namespace kvio;

extern "C" {

kvio_status kvio_executor_create(int32_t io_backend, int32_t threads, uint64_t* executor_out) {
  return openExecutor(io_backend, executor_out, [&](std::unique_ptr<Executor>* executor) {
    return backendOps(io_backend)->create(threads, executor);
  });
}

kvio_status kvio_executor_threads(uint64_t executor_handle, int32_t* threads_out) {
  return withObject(executors(), executor_handle, "executor", threads_out, "threads_out",
                    [&](ExecutorImpl& executor) {
                      *threads_out = executor.executor->threads();
                      return KVIO_STATUS_OK;
                    });
}

kvio_status kvio_executor_close(uint64_t executor_handle) {
  return guarded([&]() -> kvio_status {
    std::shared_ptr<ExecutorImpl> executor;
    KVIO_RETURN_IF_ERROR(executors().remove(executor_handle, "executor", &executor));
    executor->executor->drain();
    return KVIO_STATUS_OK;
  });
}

}  // extern "C"
