// Loads the Ascend ACL runtime at run time: dlopen of libascendcl.so (the loader's search path,
// then $ASCEND_HOME_PATH/lib64, $ASCEND_TOOLKIT_HOME/lib64 and the default CANN install
// directory), dlsym of every function of AclApi (acl_api.hpp), and aclInit. One build of kvio
// thus runs with and without CANN; without it the backend reports why it is absent. Tests
// replace the table with a host emulation (installAclForTesting, kvio_test_ascend_runtime).
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "acl_api.hpp"

namespace kvio {
namespace ascend {
namespace {

struct Loaded {
  AclApi api;
  bool ok = false;
  std::string cause;
  std::string origin;
};

template <class F>
bool resolve(void* library, const char* name, F* out, std::string* missing) {
  void* symbol = dlsym(library, name);
  *out = reinterpret_cast<F>(symbol);
  if (symbol == nullptr && missing != nullptr) {
    if (!missing->empty()) *missing += ", ";
    *missing += name;
  }
  return symbol != nullptr;
}

void* openLibrary(std::string* path, std::string* errors) {
  std::vector<std::string> candidates{"libascendcl.so"};
  for (const char* variable : {"ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"}) {
    const char* home = std::getenv(variable);
    if (home != nullptr && home[0] != '\0') {
      candidates.push_back(std::string(home) + "/lib64/libascendcl.so");
    }
  }
  candidates.push_back("/usr/local/Ascend/ascend-toolkit/latest/lib64/libascendcl.so");
  for (const std::string& candidate : candidates) {
    void* library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) {
      *path = candidate;
      return library;
    }
    const char* error = dlerror();
    if (errors->empty()) *errors = error != nullptr ? error : candidate + ": not found";
  }
  return nullptr;
}

Loaded load() {
  Loaded l;
  std::string errors;
  void* library = openLibrary(&l.origin, &errors);
  if (library == nullptr) {
    l.cause = "no Ascend ACL runtime: libascendcl.so not found: " + errors +
              " (also looked in $ASCEND_HOME_PATH/lib64, $ASCEND_TOOLKIT_HOME/lib64 and "
              "/usr/local/Ascend/ascend-toolkit/latest/lib64); install CANN or set "
              "ASCEND_HOME_PATH";
    return l;
  }
  l.origin = "libascendcl.so (" + l.origin + ")";
  AclApi& a = l.api;
  std::string missing;
  resolve(library, "aclInit", &a.init, &missing);
  resolve(library, "aclrtSetDevice", &a.setDevice, &missing);
  resolve(library, "aclrtGetDeviceCount", &a.getDeviceCount, &missing);
  resolve(library, "aclrtCreateStream", &a.createStream, &missing);
  resolve(library, "aclrtDestroyStream", &a.destroyStream, &missing);
  resolve(library, "aclrtSynchronizeStream", &a.synchronizeStream, &missing);
  resolve(library, "aclrtCreateEvent", &a.createEvent, &missing);
  resolve(library, "aclrtRecordEvent", &a.recordEvent, &missing);
  resolve(library, "aclrtQueryEventStatus", &a.queryEventStatus, &missing);
  resolve(library, "aclrtSynchronizeEvent", &a.synchronizeEvent, &missing);
  resolve(library, "aclrtDestroyEvent", &a.destroyEvent, &missing);
  resolve(library, "aclrtMalloc", &a.malloc, &missing);
  resolve(library, "aclrtFree", &a.free, &missing);
  resolve(library, "aclrtMallocHost", &a.mallocHost, &missing);
  resolve(library, "aclrtFreeHost", &a.freeHost, &missing);
  resolve(library, "aclrtHostRegister", &a.hostRegister, nullptr);  // not called (acl_api.hpp)
  resolve(library, "aclrtHostUnregister", &a.hostUnregister, &missing);
  resolve(library, "aclrtMemset", &a.memset, &missing);
  resolve(library, "aclrtMemcpyAsync", &a.memcpyAsync, &missing);
  resolve(library, "aclrtMemcpy2dAsync", &a.memcpy2dAsync, &missing);
  if (ascendBatchCopiesWanted(std::getenv("KVIO_ASCEND_BATCH"))) {  // opt-in (acl_api.hpp)
    resolve(library, "aclrtMemcpyBatchAsync", &a.memcpyBatchAsync, nullptr);  // CANN >= 8.3.RC1
  }
  resolve(library, "aclGetRecentErrMsg", &a.getRecentErrMsg, nullptr);
  resolve(library, "aclrtGetCurrentContext", &a.getCurrentContext, nullptr);
  resolve(library, "aclrtSetCurrentContext", &a.setCurrentContext, nullptr);
  resolve(library, "aclrtGetDevice", &a.getDevice, nullptr);
  // Pins caller host memory (ACL_HOST_REG_PINNED); without it wrapping as pinned is refused.
  resolve(library, "aclrtHostRegisterV2", &a.hostRegisterV2, nullptr);
  // Tells caller memory that is pinned already (aclrtMallocHost) from pageable memory when
  // wrapping (ascend_memory.cpp); without it every wrapped region is pinned with V2.
  resolve(library, "aclrtPointerGetAttributes", &a.pointerGetAttributes, nullptr);
  // Graph capture (aclmdlRICaptureBegin, where the runtime has it): a submit to a stream being
  // captured is refused (ascend_executor.cpp), and kvio's unsafe calls run in the relaxed mode
  // (acl_device.hpp, RelaxedCapture); without them, no capture to mind.
  resolve(library, "aclmdlRICaptureGetInfo", &a.captureGetInfo, nullptr);
  resolve(library, "aclmdlRICaptureThreadExchangeMode", &a.captureThreadExchangeMode, nullptr);
  if (!missing.empty()) {
    l.cause = l.origin + " lacks " + missing + " (a CANN release too old for kvio)";
    return l;  // the library stays loaded: unloading a runtime is never safe
  }
  l.ok = true;
  return l;
}

std::mutex& mutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}

// The installed test table (copied) and the loaded runtime; both live until exit.
AclApi* testApi = nullptr;
Loaded* loaded = nullptr;
const AclApi* initialised = nullptr;  // the table aclInit last succeeded for
// Made once and never destroyed, like the other statics here: a static destructor that runs
// after libkvio's may still reach aclInit's failure path (kvio.h's thread-exit contract).
std::string& initCause = *new std::string();

}  // namespace

const AclApi* aclApi(std::string* cause) {
  std::lock_guard<std::mutex> lock(mutex());
  const AclApi* api = testApi;
  if (api == nullptr) {
    if (loaded == nullptr) {
      loaded = new Loaded(load());
      loaded->api.origin = loaded->origin.c_str();
    }
    if (!loaded->ok) {
      *cause = loaded->cause;
      return nullptr;
    }
    api = &loaded->api;
  }
  if (initialised != api) {
    // Once per table. CANN's aclInit is reference-counted: after the first call, another only adds
    // to the count and answers ACL_ERROR_REPEAT_INITIALIZE without reading its configuration, so
    // an application's aclInit(config) after this one loses its config (kvio.h asks callers to
    // initialise ACL first). kvio never finalizes (its count stays): other users may need ACL.
    const aclError e = api->init(nullptr);
    if (e != ACL_SUCCESS && e != ACL_ERROR_REPEAT_INITIALIZE) {  // repeat: another user's init
      initCause = std::string("aclInit(nullptr) failed with ") + aclErrorName(e) + " (" +
                  std::to_string(e) + ") in " + api->origin;
      *cause = initCause;
      return nullptr;
    }
    initialised = api;
  }
  return api;
}

void installAclForTesting(const AclApi* api) {
  std::lock_guard<std::mutex> lock(mutex());
  // Every table installed stays alive (and reachable) until exit: completions and memory owners
  // of an earlier table may still call through it.
  static std::vector<std::unique_ptr<AclApi>>* installed =
      new std::vector<std::unique_ptr<AclApi>>();
  initialised = nullptr;
  if (api == nullptr) {
    testApi = nullptr;
    return;
  }
  installed->push_back(std::make_unique<AclApi>(*api));
  testApi = installed->back().get();
}

const char* aclErrorName(aclError error) {
  switch (error) {
    case ACL_SUCCESS: return "ACL_SUCCESS";
    case ACL_ERROR_INVALID_PARAM: return "ACL_ERROR_INVALID_PARAM";
    case ACL_ERROR_REPEAT_INITIALIZE: return "ACL_ERROR_REPEAT_INITIALIZE";
    case ACL_ERROR_BAD_ALLOC: return "ACL_ERROR_BAD_ALLOC";
    case ACL_ERROR_RT_PARAM_INVALID: return "ACL_ERROR_RT_PARAM_INVALID";
    case ACL_ERROR_RT_INVALID_DEVICEID: return "ACL_ERROR_RT_INVALID_DEVICEID";
    case ACL_ERROR_RT_CONTEXT_NULL: return "ACL_ERROR_RT_CONTEXT_NULL";
    case ACL_ERROR_RT_STREAM_CONTEXT: return "ACL_ERROR_RT_STREAM_CONTEXT";
    case ACL_ERROR_RT_INVALID_HANDLE: return "ACL_ERROR_RT_INVALID_HANDLE";
    case ACL_ERROR_RT_FEATURE_NOT_SUPPORT: return "ACL_ERROR_RT_FEATURE_NOT_SUPPORT";
    case ACL_ERROR_RT_MEMORY_ALLOCATION: return "ACL_ERROR_RT_MEMORY_ALLOCATION";
    case ACL_ERROR_RT_NO_DEVICE: return "ACL_ERROR_RT_NO_DEVICE";
    case ACL_ERROR_RT_DEVICE_OOM: return "ACL_ERROR_RT_DEVICE_OOM";
    case ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
      return "ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED";
    case ACL_ERROR_HOST_MEMORY_NOT_REGISTERED: return "ACL_ERROR_HOST_MEMORY_NOT_REGISTERED";
    case ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT: return "ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT";
    default: break;
  }
  // What a failed task, a wait or a capture reports (rt_error_codes.h), named so that a message
  // says more than "ACL error"; kvio acts on none of them, so they have no constants.
  static const struct {
    aclError code;
    const char* name;
  } kReported[] = {
      {107008, "ACL_ERROR_RT_ADDR_UNALIGNED"},
      {107019, "ACL_ERROR_RT_WAIT_TIMEOUT"},
      {107020, "ACL_ERROR_RT_TASK_TIMEOUT"},
      {107022, "ACL_ERROR_RT_DEVICE_TASK_ABORT"},
      {107023, "ACL_ERROR_RT_STREAM_ABORT"},
      {107027, "ACL_ERROR_RT_STREAM_CAPTURED"},
      {107041, "ACL_ERROR_RT_CAPTURE_MODE_BLOCK_ASYNC"},
      {207020, "ACL_ERROR_RT_TIMEOUT"},
      {507000, "ACL_ERROR_RT_INTERNAL_ERROR"},
      {507013, "ACL_ERROR_RT_SYS_DMA"},
      {507015, "ACL_ERROR_RT_AICORE_EXCEPTION"},
      {507046, "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT"},
      {507047, "ACL_ERROR_RT_EVENT_SYNC_TIMEOUT"},
      {507053, "ACL_ERROR_RT_DEVICE_MEM_ERROR"},
      {507054, "ACL_ERROR_RT_HBM_MULTI_BIT_ECC_ERROR"},
      {507899, "ACL_ERROR_RT_DRV_INTERNAL_ERROR"},
      {507903, "ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED"},
  };
  for (const auto& r : kReported) {
    if (r.code == error) return r.name;
  }
  return "ACL error";
}

}  // namespace ascend
}  // namespace kvio
