// What the C ABI's entry points share beyond guard.hpp: running a body on the object a handle
// names (the out argument checked first), opening an executor, the native handles (streams,
// events) of executors and transfers, and device counts. The core's entry points and the vendor
// ones (each backend folder's *_api.cpp) use them alike.
#ifndef KVIO_CORE_ENTRY_HPP_
#define KVIO_CORE_ENTRY_HPP_

#include <cstdint>
#include <memory>

#include "backends.hpp"
#include "guard.hpp"
#include "handles.hpp"
#include "names.hpp"

namespace kvio {

/// Guarded: body(object) for the object `handle` names in `registry`; CLOSED or
/// INVALID_ARGUMENT naming `argument` when there is none (Registry::get).
template <class T, class F>
kvio_status withObject(Registry<T>& registry, uint64_t handle, const char* argument, F&& body) {
  return guarded([&]() -> kvio_status {
    std::shared_ptr<T> object;
    KVIO_RETURN_IF_ERROR(registry.get(handle, argument, &object));
    return body(*object);
  });
}

/// The same for an entry point that writes `out`: INVALID_ARGUMENT naming `outName` when it is
/// null, before the handle is looked up.
template <class T, class F>
kvio_status withObject(Registry<T>& registry, uint64_t handle, const char* argument,
                       const void* out, const char* outName, F&& body) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(out, outName));
    return withObject(registry, handle, argument, body);
  });
}

/// The body of kvio_executor_create*: guarded; INVALID_ARGUMENT for a null `out`
/// ("executor_out") or an unknown `backend`, then checkArguments() (what is wrong with the
/// arguments on every machine: said before whether the backend is present, so that the answer
/// does not depend on the machine), the backend's availability (kvio_backend_available), then
/// the executor of io backend `backend` that create(&executor) makes is registered and its handle
/// written to *out (OUT_OF_MEMORY when no executor handle is left: the executor is then closed).
template <class Check, class F>
kvio_status openExecutor(int32_t backend, uint64_t* out, Check&& checkArguments, F&& create) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(out, "executor_out"));
    KVIO_RETURN_IF_ERROR(checkEnumValue(Enumeration::kBackend, backend, "io_backend"));
    KVIO_RETURN_IF_ERROR(checkArguments());
    KVIO_RETURN_IF_ERROR(kvio_backend_available(backend));
    KVIO_RETURN_IF_ERROR(executors().checkRoom());  // before the executor starts anything
    auto impl = std::make_shared<ExecutorImpl>();
    impl->backend = backend;
    KVIO_RETURN_IF_ERROR(create(&impl->executor));
    return executors().add(std::move(impl), out);  // refused: the executor is closed with impl
  });
}

/// kvio_executor_<vendor>_stream: the executor's native handle of `kind` into *out; UNSUPPORTED
/// when it has none ("... not a <wanted> one").
inline kvio_status executorNativeHandle(uint64_t handle, NativeHandle kind, const char* wanted,
                                        uint64_t* out, const char* outName) {
  return withObject(
      executors(), handle, "executor", out, outName, [&](ExecutorImpl& executor) -> kvio_status {
        if (executor.executor->nativeHandle(kind, out)) return KVIO_STATUS_OK;
        return fail(KVIO_STATUS_UNSUPPORTED, "executor 0x%llx is a '%s' executor, not a %s one",
                    static_cast<unsigned long long>(handle),
                    kvio_name(KVIO_NAME_BACKEND, executor.backend), wanted);
      });
}

/// kvio_transfer_<vendor>_event: the native handle of `kind` of the transfer's device completion
/// into *out; UNSUPPORTED when it has none ("transfer ... has no <what>").
inline kvio_status transferNativeHandle(uint64_t transfer, NativeHandle kind, const char* what,
                                        uint64_t* out, const char* outName) {
  return withObject(transfers(), transfer, "transfer", out, outName,
                    [&](TransferState& state) -> kvio_status {
                      std::shared_ptr<DeviceCompletion> completion = state.deviceCompletion();
                      if (completion != nullptr && completion->nativeHandle(kind, out)) {
                        return KVIO_STATUS_OK;
                      }
                      return fail(KVIO_STATUS_UNSUPPORTED, "transfer 0x%llx has no %s",
                                  static_cast<unsigned long long>(transfer), what);
                    });
}

/// kvio_<vendor>_device_count: INVALID_ARGUMENT for a null `out`; else *out = 0, then
/// count(out) writes the count or fails.
template <class F>
kvio_status countDevices(int32_t* out, F&& count) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(out, "count_out"));
    *out = 0;
    return count(out);
  });
}

}  // namespace kvio

#endif  // KVIO_CORE_ENTRY_HPP_
