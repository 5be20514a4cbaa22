// The executor entry points of the C ABI that every backend shares: create one for an io
// backend, ask its thread count, close it, and an 'auto' executor's calibration. The vendor
// entry points (executors on a device and stream, launch settings) are in the backend folders.
#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "auto_executor.hpp"
#include "entry.hpp"
#include "thread_object.hpp"

using namespace kvio;

namespace {

// The 'auto' executor behind `executor`, or UNSUPPORTED saying what it is instead.
kvio_status asAuto(ExecutorImpl& executor, AutoExecutor** out) {
  if (executor.backend != KVIO_BACKEND_AUTO) {
    return fail(KVIO_STATUS_UNSUPPORTED,
                "executor is a '%s' executor; only 'auto' executors have a calibration",
                kvio_name(KVIO_NAME_BACKEND, executor.backend));
  }
  *out = static_cast<AutoExecutor*>(executor.executor.get());
  return KVIO_STATUS_OK;
}

}  // namespace

extern "C" {

kvio_status kvio_executor_create(int32_t io_backend, int32_t threads, uint64_t* executor_out) {
  return openExecutor(
      io_backend, executor_out, [&] { return checkThreadCount(threads); },
      [&](std::unique_ptr<Executor>* executor) {
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

kvio_status kvio_executor_backend(uint64_t executor_handle, int32_t* io_backend_out) {
  return withObject(executors(), executor_handle, "executor", io_backend_out, "io_backend_out",
                    [&](ExecutorImpl& executor) {
                      *io_backend_out = executor.backend;
                      return KVIO_STATUS_OK;
                    });
}

kvio_status kvio_executor_close(uint64_t executor_handle) {
  return guarded([&]() -> kvio_status {
    std::shared_ptr<ExecutorImpl> executor;
    KVIO_RETURN_IF_ERROR(executors().remove(executor_handle, "executor", &executor));
    if (executor->forkGeneration != forkGeneration()) {
      // Made in a parent before this process was forked: its threads do not exist here, so it
      // can neither drain nor be destroyed (joining them would fail or hang). Its handle is
      // released; the object is left, as the parent's threads left it.
      (void)executor->executor.release();
      return KVIO_STATUS_OK;
    }
    // Submissions that found the executor before its handle went may still be queueing:
    // refuse new ones, wait for those (usually microseconds; longer when a submit waits for a
    // CUDA staging slot or copies part of its job itself), then drain, so that every transfer it
    // accepted is done when close returns.
    executor->closing.store(true);
    auto pause = std::chrono::microseconds(10);
    for (int spins = 0; executor->submitting.load() != 0; ++spins) {
      if (spins < 64) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(pause);
        pause = std::min(2 * pause, std::chrono::microseconds(1000));
      }
    }
    executor->executor->drain();
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_executor_set_auto_calibration(uint64_t executor_handle, const char* text) {
  return withObject(executors(), executor_handle, "executor", text, "text",
                    [&](ExecutorImpl& executor) -> kvio_status {
                      AutoExecutor* chooser = nullptr;
                      KVIO_RETURN_IF_ERROR(asAuto(executor, &chooser));
                      AutoCalibration calibration;
                      KVIO_RETURN_IF_ERROR(parseAutoCalibration(
                          text, "set by kvio_executor_set_auto_calibration", &calibration));
                      chooser->setCalibration(std::move(calibration));
                      return KVIO_STATUS_OK;
                    });
}

const char* kvio_executor_auto_calibration(uint64_t executor_handle) {
  struct CalibrationTextTag;
  const char* result = nullptr;
  (void)withObject(executors(), executor_handle, "executor",
                   [&](ExecutorImpl& executor) -> kvio_status {
                     AutoExecutor* chooser = nullptr;
                     KVIO_RETURN_IF_ERROR(asAuto(executor, &chooser));
                     // The thread keeps the text until its next call (thread_object.hpp).
                     std::string* text = ThreadObject<std::string, CalibrationTextTag>::get();
                     if (text == nullptr) {
                       return fail(KVIO_STATUS_UNAVAILABLE,
                                   "the calling thread is exiting: its storage for the "
                                   "calibration text is gone; read it on a running thread");
                     }
                     *text = formatAutoCalibration(chooser->calibration());
                     result = text->c_str();
                     return KVIO_STATUS_OK;
                   });
  return result;
}

}  // extern "C"
