// The executor entry points of the C ABI that every backend shares: create one for an io
// backend, ask its thread count, set its launch shape, close it. The vendor entry points
// (executors on a device and stream) are in the backend folders.
#include "auto_executor.hpp"
#include "backends.hpp"
#include "guard.hpp"
#include "handles.hpp"

using namespace kvio;

namespace {

kvio_status autoExecutor(uint64_t handle, std::shared_ptr<ExecutorImpl>* impl, AutoExecutor** out) {
  KVIO_RETURN_IF_ERROR(executors().get(handle, "executor", impl));
  if ((*impl)->backend != KVIO_BACKEND_AUTO) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT,
                "executor is a '%s' executor; only 'auto' executors have a calibration",
                kvio_name(KVIO_NAME_BACKEND, (*impl)->backend));
  }
  *out = static_cast<AutoExecutor*>((*impl)->executor.get());
  return KVIO_STATUS_OK;
}

}  // namespace

extern "C" {

kvio_status kvio_executor_create(int32_t io_backend, int32_t threads, uint64_t* executor_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(executor_out, "executor_out"));
    KVIO_RETURN_IF_ERROR(kvio_backend_available(io_backend));
    auto impl = std::make_shared<ExecutorImpl>();
    impl->backend = io_backend;
    KVIO_RETURN_IF_ERROR(backendOps(io_backend)->create(threads, &impl->executor));
    *executor_out = executors().add(std::move(impl));
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_executor_threads(uint64_t executor_handle, int32_t* threads_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(threads_out, "threads_out"));
    std::shared_ptr<ExecutorImpl> executor;
    KVIO_RETURN_IF_ERROR(executors().get(executor_handle, "executor", &executor));
    *threads_out = executor->executor->threads();
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

kvio_status kvio_executor_set_launch(uint64_t executor_handle, int32_t cta_budget,
                                     int32_t warps_per_cta) {
  return guarded([&]() -> kvio_status {
    std::shared_ptr<ExecutorImpl> executor;
    KVIO_RETURN_IF_ERROR(executors().get(executor_handle, "executor", &executor));
    return executor->executor->setLaunch(cta_budget, warps_per_cta);
  });
}

kvio_status kvio_executor_set_auto_calibration(uint64_t executor_handle, const char* text) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(text, "text"));
    std::shared_ptr<ExecutorImpl> impl;
    AutoExecutor* executor = nullptr;
    KVIO_RETURN_IF_ERROR(autoExecutor(executor_handle, &impl, &executor));
    AutoCalibration calibration;
    KVIO_RETURN_IF_ERROR(
        parseAutoCalibration(text, "set by kvio_executor_set_auto_calibration", &calibration));
    executor->setCalibration(std::move(calibration));
    return KVIO_STATUS_OK;
  });
}

const char* kvio_executor_auto_calibration(uint64_t executor_handle) {
  thread_local std::string text;
  const kvio_status status = guarded([&]() -> kvio_status {
    std::shared_ptr<ExecutorImpl> impl;
    AutoExecutor* executor = nullptr;
    KVIO_RETURN_IF_ERROR(autoExecutor(executor_handle, &impl, &executor));
    text = formatAutoCalibration(executor->calibration());
    return KVIO_STATUS_OK;
  });
  return status == KVIO_STATUS_OK ? text.c_str() : nullptr;
}

}  // extern "C"
