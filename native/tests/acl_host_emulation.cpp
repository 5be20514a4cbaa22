// The host emulation of the ACL runtime (see acl_host_emulation.hpp). All state lives in one
// mutex-protected object; every emulated function takes the lock, checks its arguments, and
// either answers an ACL error (remembering a message for aclGetRecentErrMsg) or does the work.
// Memory is a map of allocations by start address: a copy's range (a 2-D copy's footprint,
// each batch entry) must lie inside one of them, so a copy spanning two adjacent allocations
// is refused like on the device. Contexts: each thread has a current context (none at first);
// aclrtSetDevice creates a device's default context once and binds it; calls that need a
// context answer ACL_ERROR_RT_CONTEXT_NULL without one, and act for its device.
#include "acl_host_emulation.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "kvio/kvio.h"

namespace kvio_test {
namespace {

using namespace kvio::ascend;

enum class Place { Device, PinnedHost };

struct Range {
  uint64_t bytes;
  Place place;
  int32_t device;
};

// An emulated context: its device, and whether it is the device's default context.
struct Ctx {
  int32_t device;
  bool isDefault;
};

// One aclrtHostRegister or aclrtHostRegisterV2 of [key, key + bytes): the runtime's table of
// registered host memory is one for the whole process (not per device), and
// aclrtHostUnregister takes only the pointer that was registered (the key).
struct Registration {
  uint64_t bytes;
  bool pinned;     // V2 with ACL_HOST_REG_PINNED; V1 (and V2 MAPPED alone) only map
  int32_t device;  // the device of the context it was made in (for registrations(device))
};

constexpr uint64_t kPage = 4096;
// ACL_ERROR_RT_SYS_DMA (rt_error_codes.h): what a copy that failed on the device reports.
constexpr aclError kAclErrorSysDma = 507013;

struct State {
  std::mutex mutex;
  std::map<uint64_t, Range> memory;                // by start address
  std::map<uint64_t, Registration> registrations;  // process-wide, by registered pointer
  bool holding = false;                            // holdStream: work waits for releaseStream
  bool deferring = false;  // deferWork: held work also runs at an event's second status query
  int64_t deferredQueries = 0;
  std::function<void()> beforeFreeHost;     // run by aclrtFreeHost first, unlocked
  std::vector<std::function<void()>> held;  // copies, in stream order
  std::set<uint64_t> heldEvents;            // recorded while holding
  int64_t faults = 0;                       // copies that failed when they ran
  std::string faultMessage;
  // Task failures (stopOnFailure, failTask): whether a failed task stops the contexts, the
  // error that stopped them (ACL_SUCCESS: running), the error aclrtSynchronizeStream reports
  // once in CONTINUE mode (one for every stream, where the runtime keeps one per stream: the
  // tests that fail tasks use one stream), and the copy to fail (counted down per queued copy; -1:
  // none).
  bool stopOnFailure = false;
  aclError stopped = ACL_SUCCESS;
  aclError streamError = ACL_SUCCESS;
  int64_t failTaskNth = -1;
  std::map<uint64_t, uint64_t> streams;  // stream -> the context it was created in
  std::map<uint64_t, Ctx> contexts;      // every context ever created (never destroyed)
  std::map<int32_t, uint64_t> defaultContexts;
  std::map<int32_t, int64_t> setDeviceCalls;
  std::set<uint64_t> events;
  std::set<uint64_t> recorded;
  // Streams being captured into a graph (setCapture; absent: NONE), the events recorded in a
  // capture, and what aclmdlRICaptureGetInfo answers (setCaptureInfoResult).
  struct Capture {
    aclmdlRICaptureStatus status;
    aclmdlRICaptureMode mode;
    std::thread::id thread;  // the capturing one
  };
  std::map<uint64_t, Capture> captures;
  std::set<uint64_t> capturedEvents;
  aclError captureInfoResult = ACL_SUCCESS;
  uint64_t nextHandle = 0x1000;
  uint32_t deviceCount = 1;
  aclError batchResult = ACL_SUCCESS;
  std::map<std::string, std::pair<int64_t, aclError>> failures;  // function -> (nth, error)
  AclCallCounts counts;
  std::vector<AclCopyRecord> records;
  std::string recent;
  bool initialised = false;
  bool refuseUnalignedDeviceCopies = false;
  int64_t deviceAllocations = 0;
};

State& state() {
  static State* s = new State();
  return *s;
}

thread_local uint64_t currentContext = 0;  // none
thread_local std::string threadRecent;     // what aclGetRecentErrMsg answers on this thread
// The thread's capture mode (aclmdlRICaptureThreadExchangeMode); GLOBAL until changed.
thread_local aclmdlRICaptureMode threadCaptureMode = ACL_MODEL_RI_CAPTURE_MODE_GLOBAL;

// Device `device`'s default context, created if it does not exist yet.
uint64_t defaultContext(State& s, int32_t device) {
  auto it = s.defaultContexts.find(device);
  if (it != s.defaultContexts.end()) return it->second;
  const uint64_t handle = s.nextHandle++;
  s.contexts[handle] = Ctx{device, true};
  s.defaultContexts[device] = handle;
  return handle;
}

// Answers an argument error: remembers the message, counts the rejection.
aclError reject(State& s, aclError error, const char* format, ...)
    __attribute__((format(printf, 3, 4)));
aclError reject(State& s, aclError error, const char* format, ...) {
  char text[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof(text), format, args);
  va_end(args);
  s.recent = std::string("emulated ACL: ") + text;
  threadRecent = s.recent;
  ++s.counts.rejected;
  return error;
}

// The device of the calling thread's current context, or ACL_ERROR_RT_CONTEXT_NULL (the
// runtime's answer where a call needs a context and the thread has none).
aclError contextDevice(State& s, const char* call, int32_t* device) {
  auto it = s.contexts.find(currentContext);
  if (currentContext == 0 || it == s.contexts.end()) {
    return reject(s, ACL_ERROR_RT_CONTEXT_NULL, "%s: the calling thread has no current context",
                  call);
  }
  *device = it->second.device;
  return ACL_SUCCESS;
}

// An injected failure of this call, if one is due.
bool injected(State& s, const char* function, aclError* error) {
  auto it = s.failures.find(function);
  if (it == s.failures.end()) return false;
  if (it->second.first-- != 0) return false;
  *error = it->second.second;
  s.failures.erase(it);
  s.recent = std::string("emulated ACL: injected failure of ") + function;
  threadRecent = s.recent;
  ++s.counts.rejected;
  return true;
}

#define KVIO_EMULATION_ENTER(function)       \
  State& s = state();                        \
  std::lock_guard<std::mutex> lock(s.mutex); \
  aclError injectedError = ACL_SUCCESS;      \
  if (injected(s, function, &injectedError)) return injectedError

// ... and binds `device` to the current context's device, or answers ACL_ERROR_RT_CONTEXT_NULL.
#define KVIO_EMULATION_NEEDS_CONTEXT(function)                       \
  int32_t device = -1;                                               \
  {                                                                  \
    const aclError noContext_ = contextDevice(s, function, &device); \
    if (noContext_ != ACL_SUCCESS) return noContext_;                \
  }

// The entry of `map` (start address -> something of `bytes`) holding [address, +bytes), or
// nullptr.
template <class Map>
const typename Map::mapped_type* holding(const Map& map, uint64_t address, uint64_t bytes) {
  auto it = map.upper_bound(address);
  if (it == map.begin()) return nullptr;
  --it;
  if (address + bytes > it->first + it->second.bytes) return nullptr;
  return &it->second;
}

// The allocation holding [address, address + bytes), or nullptr.
const Range* find(State& s, uint64_t address, uint64_t bytes) {
  return holding(s.memory, address, bytes);
}

const char* kindText(aclrtMemcpyKind kind) {
  switch (kind) {
    case ACL_MEMCPY_HOST_TO_HOST: return "ACL_MEMCPY_HOST_TO_HOST";
    case ACL_MEMCPY_HOST_TO_DEVICE: return "ACL_MEMCPY_HOST_TO_DEVICE";
    case ACL_MEMCPY_DEVICE_TO_HOST: return "ACL_MEMCPY_DEVICE_TO_HOST";
    case ACL_MEMCPY_DEVICE_TO_DEVICE: return "ACL_MEMCPY_DEVICE_TO_DEVICE";
  }
  return "an unknown aclrtMemcpyKind";
}

// The registration holding [address, address + bytes), or nullptr.
const Registration* registered(State& s, uint64_t address, uint64_t bytes) {
  return holding(s.registrations, address, bytes);
}

// True when [address, +bytes) is inside one aclrtMallocHost buffer or one pinned registration
// (what a copy needs of host memory when it runs). A pinned registration is the process's, as
// the runtime's table is: the emulation lets every device's copies use it (kvio does not).
bool pinnedHost(State& s, int32_t, uint64_t address, uint64_t bytes) {
  const Registration* reg = registered(s, address, bytes);
  if (reg != nullptr && reg->pinned) return true;
  const Range* r = find(s, address, bytes);
  return r != nullptr && r->place == Place::PinnedHost;
}

// True when [address, +bytes) is inside a registration that maps but does not pin (V1): the
// copy calls accept it and fail unpredictably when the copy runs (aclrtMemcpyAsync's and
// aclrtHostRegister's references), which the emulation reports as a fault.
bool mappedOnly(State& s, uint64_t address, uint64_t bytes) {
  const Registration* reg = registered(s, address, bytes);
  return reg != nullptr && !reg->pinned;
}

// Checks that [address, +extent) lies in one allocation on the side `kind` says: device memory
// of `device`, or host memory pinned for it (a registration for another device does not do).
aclError checkSide(State& s, int32_t device, const char* side, uint64_t address, uint64_t extent,
                   bool onDevice) {
  const bool isDevice = onDevice;
  if (!isDevice && pinnedHost(s, device, address, extent)) return ACL_SUCCESS;
  if (!isDevice && mappedOnly(s, address, extent)) return ACL_SUCCESS;  // fails as it runs
  const Range* r = find(s, address, extent);
  if (r == nullptr) {
    return reject(s, ACL_ERROR_INVALID_PARAM,
                  "%s range [0x%llx, +%llu) is not inside one device allocation or host buffer "
                  "pinned for device %d (aclrtMallocHost, or registered with that device's "
                  "context current)",
                  side, static_cast<unsigned long long>(address),
                  static_cast<unsigned long long>(extent), device);
  }
  if ((r->place == Place::Device) != isDevice) {
    return reject(s, ACL_ERROR_INVALID_PARAM, "%s 0x%llx is %s memory but the copy kind says %s",
                  side, static_cast<unsigned long long>(address),
                  r->place == Place::Device ? "device" : "host", isDevice ? "device" : "host");
  }
  if (isDevice && r->device != device) {
    return reject(s, ACL_ERROR_INVALID_PARAM,
                  "%s 0x%llx is memory of device %d but the copy runs on device %d", side,
                  static_cast<unsigned long long>(address), r->device, device);
  }
  return ACL_SUCCESS;
}

// Checks that `stream` exists (nullptr: the current context's default stream) and, for work
// issued on it (`issuing`), that it belongs to the calling thread's current context: CANN's
// runtime compares the stream's context with the current one in its copy, record and launch
// paths (ACL_ERROR_RT_STREAM_CONTEXT), so a stream of another context fails even on the same
// device.
aclError checkStream(State& s, aclrtStream stream, bool issuing = false) {
  if (stream == nullptr) return ACL_SUCCESS;
  auto it = s.streams.find(reinterpret_cast<uint64_t>(stream));
  if (it == s.streams.end()) {
    return reject(s, ACL_ERROR_RT_PARAM_INVALID, "stream %p was not created (or was destroyed)",
                  stream);
  }
  if (issuing && it->second != currentContext) {
    auto owner = s.contexts.find(it->second);
    auto current = s.contexts.find(currentContext);
    return reject(s, ACL_ERROR_RT_STREAM_CONTEXT,
                  "stream %p belongs to context 0x%llx (device %d), not to the current context "
                  "0x%llx (device %d)",
                  stream, static_cast<unsigned long long>(it->second),
                  owner != s.contexts.end() ? owner->second.device : -1,
                  static_cast<unsigned long long>(currentContext),
                  current != s.contexts.end() ? current->second.device : -1);
  }
  return ACL_SUCCESS;
}

bool srcOnDevice(aclrtMemcpyKind k) {
  return k == ACL_MEMCPY_DEVICE_TO_HOST || k == ACL_MEMCPY_DEVICE_TO_DEVICE;
}
bool dstOnDevice(aclrtMemcpyKind k) {
  return k == ACL_MEMCPY_HOST_TO_DEVICE || k == ACL_MEMCPY_DEVICE_TO_DEVICE;
}
bool validKind(aclrtMemcpyKind k) {
  return k == ACL_MEMCPY_HOST_TO_HOST || k == ACL_MEMCPY_HOST_TO_DEVICE ||
         k == ACL_MEMCPY_DEVICE_TO_HOST || k == ACL_MEMCPY_DEVICE_TO_DEVICE;
}

// True when [address, +bytes) is still memory of the kind a copy on `device` was checked against.
bool stillThere(State& s, int32_t onDevice, uint64_t address, uint64_t bytes, bool device) {
  if (!device) return pinnedHost(s, onDevice, address, bytes);
  const Range* r = find(s, address, bytes);
  return r != nullptr && r->place == Place::Device;
}

// Work queued on a stream being captured is recorded into the graph (counted), not run: true
// then, and the caller queues nothing.
bool recordedIntoCapture(State& s, aclrtStream stream) {
  auto it = s.captures.find(reinterpret_cast<uint64_t>(stream));
  if (it == s.captures.end() || it->second.status == ACL_MODEL_RI_CAPTURE_STATUS_NONE) return false;
  ++s.counts.captured;
  return true;
}

// An "unsafe" call (aclrtMemset here) on this thread while a capture forbids it (the API
// reference of aclmdlRICaptureThreadExchangeMode): refused, and the captures that forbid it
// invalidated. Which error ACL answers is not documented; the emulation answers
// ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT (rt_error_codes.h: "stream is captured, not support
// current oper").
aclError refuseUnsafeCall(State& s, const char* call) {
  bool forbidden = false;
  for (auto& entry : s.captures) {
    State::Capture& c = entry.second;
    if (c.status != ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE) continue;
    const bool capturing = c.thread == std::this_thread::get_id();
    const bool forbids = c.mode == ACL_MODEL_RI_CAPTURE_MODE_GLOBAL
                             ? (capturing ? threadCaptureMode != ACL_MODEL_RI_CAPTURE_MODE_RELAXED
                                          : threadCaptureMode == ACL_MODEL_RI_CAPTURE_MODE_GLOBAL)
                             : c.mode == ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL && capturing &&
                                   threadCaptureMode != ACL_MODEL_RI_CAPTURE_MODE_RELAXED;
    if (forbids) {
      c.status = ACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED;
      forbidden = true;
    }
  }
  if (!forbidden) return ACL_SUCCESS;
  ++s.counts.unsafeRefused;
  return reject(s, ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT,
                "%s: an unsafe call while a stream is captured in a mode that forbids it on this "
                "thread; the capture is invalidated",
                call);
}

// A copy that failed when it ran (nothing copied). What CANN's open-source runtime does then:
// in the default mode (ACL_CONTINUE_ON_FAILURE) the stream goes on with its next task, the error
// is kept on the stream for the next aclrtSynchronizeStream (once), and events recorded after the
// copy complete as usual: no event query or wait reports it. Where a stream of the context was
// set to ACL_STOP_ON_FAILURE (on A2/A3 that mode is the whole context's), the context stops: the
// rest of the stream's work never runs and every later call there reports the error.
void deviceFault(State& s, const char* text) {
  ++s.faults;
  s.faultMessage = text;
  if (s.stopOnFailure) {
    if (s.stopped == ACL_SUCCESS) s.stopped = kAclErrorSysDma;
  } else {
    s.streamError = kAclErrorSysDma;
  }
}

// Whether the copy queued now is the one failTask chose (counted per queued copy, in the order
// the caller queued them).
bool takeDoomed(State& s) {
  return s.failTaskNth >= 0 && s.failTaskNth-- == 0;
}

// Runs a checked copy now, or after releaseStream while the stream is held; `doomed`: the copy
// failTask chose (takeDoomed), which fails when it runs. When it runs, the copy checks that its
// memory is still registered or allocated (on a device, a copy over memory unregistered
// meanwhile faults) and page-locked, not only mapped; once a failed task has stopped the
// contexts it does nothing (the work queued after it never runs).
void execute(State& s, int32_t device, uint64_t dst, bool dstDevice, uint64_t dstExtent,
             uint64_t src, bool srcDevice, uint64_t srcExtent, bool doomed,
             std::function<void()> copy) {
  auto run = [&s, device, dst, dstDevice, dstExtent, src, srcDevice, srcExtent, doomed, copy] {
    if (s.stopped != ACL_SUCCESS) return;
    char text[240];
    if ((!dstDevice && mappedOnly(s, dst, dstExtent)) ||
        (!srcDevice && mappedOnly(s, src, srcExtent))) {
      std::snprintf(text, sizeof(text),
                    "a copy from 0x%llx to 0x%llx (+%llu) over host memory registered with "
                    "aclrtHostRegister (mapped for the device, not page-locked): unpredictable "
                    "errors on a device",
                    static_cast<unsigned long long>(src), static_cast<unsigned long long>(dst),
                    static_cast<unsigned long long>(dstExtent));
      deviceFault(s, text);
      return;
    }
    if (doomed) {
      std::snprintf(text, sizeof(text),
                    "the copy from 0x%llx to 0x%llx (+%llu) failed on the device (failTask)",
                    static_cast<unsigned long long>(src), static_cast<unsigned long long>(dst),
                    static_cast<unsigned long long>(dstExtent));
      deviceFault(s, text);
      return;
    }
    if (!stillThere(s, device, dst, dstExtent, dstDevice) ||
        !stillThere(s, device, src, srcExtent, srcDevice)) {
      std::snprintf(
          text, sizeof(text),
          "a held copy from 0x%llx (+%llu) to 0x%llx (+%llu) ran over memory no longer "
          "registered or allocated",
          static_cast<unsigned long long>(src), static_cast<unsigned long long>(srcExtent),
          static_cast<unsigned long long>(dst), static_cast<unsigned long long>(dstExtent));
      deviceFault(s, text);
      return;
    }
    copy();
  };
  if (s.holding) {
    s.held.push_back(std::move(run));
  } else {
    run();
  }
}

// Runs the held work, in order, and completes the events recorded meanwhile; once a failed
// task has stopped the contexts, the rest never runs and those events never complete.
void runHeld(State& s) {
  std::vector<std::function<void()>> work;
  work.swap(s.held);
  if (!work.empty() || !s.heldEvents.empty()) ++s.counts.heldWorkRuns;
  for (auto& w : work) {
    if (s.stopped != ACL_SUCCESS) break;
    w();
  }
  if (s.stopped == ACL_SUCCESS) s.recorded.insert(s.heldEvents.begin(), s.heldEvents.end());
  s.heldEvents.clear();
}

// A call that needs the context to be running, once a failed task has stopped it.
aclError refuseWhenStopped(State& s, const char* call) {
  if (s.stopped == ACL_SUCCESS) return ACL_SUCCESS;
  return reject(s, s.stopped, "%s: the context stopped at a failed task (ACL_STOP_ON_FAILURE)",
                call);
}

// ---- the emulated functions ----

aclError emuInit(const char*) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.initialised) return ACL_ERROR_REPEAT_INITIALIZE;
  s.initialised = true;
  return ACL_SUCCESS;
}

aclError emuSetDevice(int32_t device) {
  KVIO_EMULATION_ENTER("aclrtSetDevice");
  if (device < 0 || static_cast<uint32_t>(device) >= s.deviceCount) {
    return reject(s, ACL_ERROR_RT_INVALID_DEVICEID, "device %d does not exist (%u devices)", device,
                  s.deviceCount);
  }
  // Adds one to the device's reference count, creates its default context once, and makes it
  // the thread's current context (replacing any other).
  ++s.setDeviceCalls[device];
  currentContext = defaultContext(s, device);
  return ACL_SUCCESS;
}

aclError emuGetCurrentContext(aclrtContext* context) {
  KVIO_EMULATION_ENTER("aclrtGetCurrentContext");
  if (context == nullptr) return reject(s, ACL_ERROR_INVALID_PARAM, "context is null");
  if (currentContext == 0) {
    // The runtime's answer on a thread with no context (rtCtxGetCurrent); not an argument
    // error, so not counted as a rejection, but its text is the thread's recent error.
    threadRecent = "emulated ACL: aclrtGetCurrentContext: the calling thread has no context";
    return ACL_ERROR_RT_CONTEXT_NULL;
  }
  *context = reinterpret_cast<aclrtContext>(currentContext);
  return ACL_SUCCESS;
}

aclError emuSetCurrentContext(aclrtContext context) {
  KVIO_EMULATION_ENTER("aclrtSetCurrentContext");
  // Only contexts that exist; the documentation offers no unbinding (null), so neither does
  // the emulation.
  if (context == nullptr || s.contexts.count(reinterpret_cast<uint64_t>(context)) == 0) {
    // CANN's first check is ACL_REQUIRES_NOT_NULL (ACL_ERROR_INVALID_PARAM); the runtime then
    // refuses a handle that is no context of its own.
    return reject(s, context == nullptr ? ACL_ERROR_INVALID_PARAM : ACL_ERROR_RT_CONTEXT_NULL,
                  "aclrtSetCurrentContext(%p): not a context", context);
  }
  currentContext = reinterpret_cast<uint64_t>(context);
  return ACL_SUCCESS;
}

aclError emuGetDevice(int32_t* device) {
  KVIO_EMULATION_ENTER("aclrtGetDevice");
  if (device == nullptr) return reject(s, ACL_ERROR_INVALID_PARAM, "device is null");
  auto it = s.contexts.find(currentContext);
  if (it == s.contexts.end()) {
    threadRecent = "emulated ACL: aclrtGetDevice: the calling thread has no context";
    return ACL_ERROR_RT_CONTEXT_NULL;
  }
  *device = it->second.device;
  return ACL_SUCCESS;
}

aclError emuGetDeviceCount(uint32_t* count) {
  KVIO_EMULATION_ENTER("aclrtGetDeviceCount");
  if (count == nullptr) return reject(s, ACL_ERROR_INVALID_PARAM, "count is null");
  *count = s.deviceCount;
  return ACL_SUCCESS;
}

aclError emuCreateStream(aclrtStream* stream) {
  KVIO_EMULATION_ENTER("aclrtCreateStream");
  KVIO_EMULATION_NEEDS_CONTEXT("aclrtCreateStream");
  if (stream == nullptr) return reject(s, ACL_ERROR_INVALID_PARAM, "stream is null");
  const uint64_t handle = s.nextHandle++;
  (void)device;  // the stream belongs to the current context (of that device)
  s.streams[handle] = currentContext;
  *stream = reinterpret_cast<aclrtStream>(handle);
  return ACL_SUCCESS;
}

// Both need a current context, and destruction a stream of that context (aclrtDestroyStream's
// reference: "the stream is in the current context"; CANN's runtime checks both).
aclError emuDestroyStream(aclrtStream stream) {
  KVIO_EMULATION_ENTER("aclrtDestroyStream");
  KVIO_EMULATION_NEEDS_CONTEXT("aclrtDestroyStream");
  (void)device;
  if (s.streams.count(reinterpret_cast<uint64_t>(stream)) == 0) {
    return reject(s, ACL_ERROR_RT_PARAM_INVALID, "destroying unknown stream %p", stream);
  }
  const aclError e = checkStream(s, stream, true);
  if (e != ACL_SUCCESS) return e;
  s.streams.erase(reinterpret_cast<uint64_t>(stream));
  return ACL_SUCCESS;
}

aclError emuSynchronizeStream(aclrtStream stream) {
  KVIO_EMULATION_ENTER("aclrtSynchronizeStream");
  KVIO_EMULATION_NEEDS_CONTEXT("aclrtSynchronizeStream");
  (void)device;
  ++s.counts.synchronizeStream;
  runHeld(s);  // waiting for the stream lets the held work finish
  const aclError e = checkStream(s, stream);
  if (e != ACL_SUCCESS) return e;
  if (const aclError stop = refuseWhenStopped(s, "aclrtSynchronizeStream")) return stop;
  // A task that failed in CONTINUE mode is reported once, by the next synchronisation (the
  // emulation keeps one such error for all streams).
  const aclError failed = s.streamError;
  s.streamError = ACL_SUCCESS;
  if (failed != ACL_SUCCESS) {
    return reject(s, failed, "aclrtSynchronizeStream: a task of the stream failed (%s)",
                  s.faultMessage.c_str());
  }
  return ACL_SUCCESS;
}

aclError emuCreateEvent(aclrtEvent* event) {
  KVIO_EMULATION_ENTER("aclrtCreateEvent");
  KVIO_EMULATION_NEEDS_CONTEXT("aclrtCreateEvent");
  if (event == nullptr) return reject(s, ACL_ERROR_INVALID_PARAM, "event is null");
  const uint64_t handle = s.nextHandle++;
  s.events.insert(handle);
  ++s.counts.createEvent;
  *event = reinterpret_cast<aclrtEvent>(handle);
  return ACL_SUCCESS;
}

aclError emuRecordEvent(aclrtEvent event, aclrtStream stream) {
  KVIO_EMULATION_ENTER("aclrtRecordEvent");
  KVIO_EMULATION_NEEDS_CONTEXT("aclrtRecordEvent");
  if (const aclError stop = refuseWhenStopped(s, "aclrtRecordEvent")) return stop;
  const uint64_t handle = reinterpret_cast<uint64_t>(event);
  if (s.events.count(handle) == 0) {
    return reject(s, ACL_ERROR_RT_INVALID_HANDLE, "recording unknown event %p", event);
  }
  const aclError e = checkStream(s, stream, true);
  if (e != ACL_SUCCESS) return e;
  ++s.counts.recordEvent;
  s.recorded.erase(handle);  // recorded again: complete once this record is reached
  if (recordedIntoCapture(s, stream)) {
    s.capturedEvents.insert(handle);  // not complete until the capture ends
    return ACL_SUCCESS;
  }
  if (s.holding) {
    s.heldEvents.insert(handle);  // completes with the held work
  } else {
    s.recorded.insert(handle);  // everything before it on the stream has run already
  }
  return ACL_SUCCESS;
}

aclError emuQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus* status) {
  KVIO_EMULATION_ENTER("aclrtQueryEventStatus");
  const uint64_t handle = reinterpret_cast<uint64_t>(event);
  if (s.events.count(handle) == 0 || status == nullptr) {
    return reject(s, ACL_ERROR_RT_INVALID_HANDLE, "querying unknown event %p", event);
  }
  // Deferred work makes progress only when kvio looks: every other query of an event that has
  // not completed runs it, so a poller sees "not ready" at least once.
  if (s.deferring && s.heldEvents.count(handle) != 0 && ++s.deferredQueries % 2 == 0) runHeld(s);
  if (const aclError stop = refuseWhenStopped(s, "aclrtQueryEventStatus")) return stop;
  *status = s.recorded.count(handle) != 0 ? ACL_EVENT_RECORDED_STATUS_COMPLETE
                                          : ACL_EVENT_RECORDED_STATUS_NOT_READY;
  return ACL_SUCCESS;
}

aclError emuSynchronizeEvent(aclrtEvent event) {
  KVIO_EMULATION_ENTER("aclrtSynchronizeEvent");
  if (s.events.count(reinterpret_cast<uint64_t>(event)) == 0) {
    return reject(s, ACL_ERROR_RT_INVALID_HANDLE, "synchronizing unknown event %p", event);
  }
  runHeld(s);  // waiting for the event lets the held work finish
  return refuseWhenStopped(s, "aclrtSynchronizeEvent");
}

aclError emuDestroyEvent(aclrtEvent event) {
  KVIO_EMULATION_ENTER("aclrtDestroyEvent");
  const uint64_t handle = reinterpret_cast<uint64_t>(event);
  if (s.events.erase(handle) == 0) {
    return reject(s, ACL_ERROR_RT_INVALID_HANDLE, "destroying unknown event %p", event);
  }
  s.recorded.erase(handle);
  s.heldEvents.erase(handle);
  return ACL_SUCCESS;
}

void* alignedAllocation(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes == 0 ? 1 : bytes) != 0) return nullptr;
  return p;
}

// aclrtMalloc and aclrtMallocHost: an aligned allocation, recorded as memory of `place`.
aclError allocate(State& s, const char* call, void** pointer, size_t bytes, Place place,
                  int32_t device) {
  if (pointer == nullptr || bytes == 0) {
    return reject(s, ACL_ERROR_INVALID_PARAM, "%s of %zu bytes into %p", call, bytes,
                  static_cast<void*>(pointer));
  }
  void* p = alignedAllocation(bytes);
  if (p == nullptr) return ACL_ERROR_RT_MEMORY_ALLOCATION;
  s.memory[reinterpret_cast<uint64_t>(p)] = Range{bytes, place, device};
  if (place == Place::Device) ++s.deviceAllocations;
  *pointer = p;
  return ACL_SUCCESS;
}

// aclrtFree and aclrtFreeHost: frees what `allocator` allocated (memory of `place`) only.
aclError release(State& s, const char* call, const char* allocator, void* pointer, Place place) {
  auto it = s.memory.find(reinterpret_cast<uint64_t>(pointer));
  if (it == s.memory.end() || it->second.place != place) {
    return reject(s, ACL_ERROR_INVALID_PARAM, "%s of %p, not an %s pointer", call, pointer,
                  allocator);
  }
  s.memory.erase(it);
  if (place == Place::Device) --s.deviceAllocations;
  std::free(pointer);
  return ACL_SUCCESS;
}

aclError emuMalloc(void** pointer, size_t bytes, aclrtMemMallocPolicy) {
  KVIO_EMULATION_ENTER("aclrtMalloc");
  KVIO_EMULATION_NEEDS_CONTEXT("aclrtMalloc");
  return allocate(s, "aclrtMalloc", pointer, bytes, Place::Device, device);
}

aclError emuFree(void* pointer) {
  KVIO_EMULATION_ENTER("aclrtFree");
  KVIO_EMULATION_NEEDS_CONTEXT("aclrtFree");  // stricter than documented: kvio frees in scope
  (void)device;
  return release(s, "aclrtFree", "aclrtMalloc", pointer, Place::Device);
}

aclError emuMallocHost(void** pointer, size_t bytes) {
  KVIO_EMULATION_ENTER("aclrtMallocHost");
  KVIO_EMULATION_NEEDS_CONTEXT("aclrtMallocHost");
  (void)device;
  return allocate(s, "aclrtMallocHost", pointer, bytes, Place::PinnedHost, -1);
}

aclError emuFreeHost(void* pointer) {
  std::function<void()> hook;
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    hook = s.beforeFreeHost;
  }
  if (hook) hook();  // outside the lock: a test may hold this thread while others call ACL
  KVIO_EMULATION_ENTER("aclrtFreeHost");
  const aclError e = release(s, "aclrtFreeHost", "aclrtMallocHost", pointer, Place::PinnedHost);
  if (e == ACL_SUCCESS) ++s.counts.freeHost;
  return e;
}

// The first registration overlapping [address, address + bytes), or nullptr.
const Registration* overlapping(State& s, uint64_t address, uint64_t bytes) {
  auto next = s.registrations.lower_bound(address + bytes);
  if (next == s.registrations.begin()) return nullptr;
  const auto prev = std::prev(next);
  return prev->first + prev->second.bytes > address ? &prev->second : nullptr;
}

// V1: maps host memory for the device (its NIC); not usable by the copy calls (the API
// reference), so a copy over it faults when it runs. The runtime has no range check here; the
// driver answers a second registration of registered memory with "busy", which the runtime
// reports as ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED (CANN's runtime tests).
aclError emuHostRegister(void* pointer, uint64_t bytes, aclrtHostRegisterType, void** devPtr) {
  KVIO_EMULATION_ENTER("aclrtHostRegister");
  KVIO_EMULATION_NEEDS_CONTEXT("aclrtHostRegister");
  const uint64_t address = reinterpret_cast<uint64_t>(pointer);
  if (pointer == nullptr || bytes == 0 || devPtr == nullptr || address % kPage != 0) {
    return reject(s, ACL_ERROR_INVALID_PARAM,
                  "aclrtHostRegister(%p, %llu): needs a 4K-aligned pointer and a size", pointer,
                  static_cast<unsigned long long>(bytes));
  }
  if (overlapping(s, address, bytes) != nullptr) {
    return reject(s, ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
                  "[%p, +%llu) overlaps a registration (the driver's answer)", pointer,
                  static_cast<unsigned long long>(bytes));
  }
  s.registrations[address] = Registration{bytes, false, device};
  *devPtr = pointer;  // the emulated NPU maps host memory at the same address
  return ACL_SUCCESS;
}

// V2 (CANN's ApiImpl::HostRegisterV2 where the driver has no pin registration): flags MAPPED,
// PINNED or both (IOMEMORY and READONLY are documented as not supported yet); a 4K-aligned
// pointer; CheckMemoryRangeRegistered: a range overlapping any registration of the process
// (pinned or mapped, made for any device) is ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED. The
// reference (hicann/runtime docs aclrtHostRegisterV2.md) allows aclrtMallocHost memory (on
// kernels 5.10 and older only that) and pageable memory (above 5.10); the runtime's range check
// looks at its own table only, which aclrtMallocHost memory is not in, so V2 registers it like
// any other range (and aclrtHostUnregister ends that registration, not the allocation).
aclError emuHostRegisterV2(void* pointer, uint64_t bytes, uint32_t flag) {
  KVIO_EMULATION_ENTER("aclrtHostRegisterV2");
  KVIO_EMULATION_NEEDS_CONTEXT("aclrtHostRegisterV2");
  const uint64_t address = reinterpret_cast<uint64_t>(pointer);
  const bool validFlag = flag == ACL_HOST_REG_MAPPED || flag == ACL_HOST_REG_PINNED ||
                         flag == (ACL_HOST_REG_MAPPED | ACL_HOST_REG_PINNED);
  if (pointer == nullptr || bytes == 0 || !validFlag || address % kPage != 0) {
    return reject(s, ACL_ERROR_INVALID_PARAM,
                  "aclrtHostRegisterV2(%p, %llu, flag 0x%x): needs a 4K-aligned pointer, a size "
                  "and ACL_HOST_REG_MAPPED and/or ACL_HOST_REG_PINNED",
                  pointer, static_cast<unsigned long long>(bytes), flag);
  }
  if (overlapping(s, address, bytes) != nullptr) {
    return reject(s, ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
                  "[%p, +%llu) overlaps a registered range (CheckMemoryRangeRegistered)", pointer,
                  static_cast<unsigned long long>(bytes));
  }
  s.registrations[address] = Registration{bytes, (flag & ACL_HOST_REG_PINNED) != 0, device};
  ++s.counts.hostRegisterV2;
  return ACL_SUCCESS;
}

// Takes the registered pointer only, from a context of any device: the table is the process's,
// so a range registered once is unregistered once.
aclError emuHostUnregister(void* pointer) {
  KVIO_EMULATION_ENTER("aclrtHostUnregister");
  KVIO_EMULATION_NEEDS_CONTEXT("aclrtHostUnregister");
  (void)device;
  if (s.registrations.erase(reinterpret_cast<uint64_t>(pointer)) == 0) {
    return reject(s, ACL_ERROR_HOST_MEMORY_NOT_REGISTERED, "%p is not a registered pointer",
                  pointer);
  }
  ++s.counts.hostUnregister;
  return ACL_SUCCESS;
}

// Where `pointer` lies, as CANN's runtime answers (NpuDriver::PtrGetAttributes): the driver's
// view of the address first (NPU memory: DEVICE and its device; page-locked host memory from
// aclrtMallocHost: HOST), and for other user memory the runtime's table of host registrations
// (IsRegisteredMemory: an address in any registration, pinned or only mapped, is HOST; else
// UNREGISTERED). It answers for that one address. The runtime's path takes no context.
aclError emuPointerGetAttributes(const void* pointer, aclrtPtrAttributes* attributes) {
  KVIO_EMULATION_ENTER("aclrtPointerGetAttributes");
  ++s.counts.pointerGetAttributes;
  if (pointer == nullptr || attributes == nullptr) {
    return reject(s, ACL_ERROR_INVALID_PARAM, "aclrtPointerGetAttributes(%p, %p)", pointer,
                  static_cast<void*>(attributes));
  }
  const uint64_t address = reinterpret_cast<uint64_t>(pointer);
  *attributes = aclrtPtrAttributes{};
  attributes->pageSize = static_cast<uint32_t>(kPage);
  const Range* r = find(s, address, 1);
  if (r != nullptr && r->place == Place::Device) {
    attributes->location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    attributes->location.id = static_cast<uint32_t>(r->device);
  } else if ((r != nullptr && r->place == Place::PinnedHost) ||
             registered(s, address, 1) != nullptr) {
    attributes->location.type = ACL_MEM_LOCATION_TYPE_HOST;
  } else {
    attributes->location.type = ACL_MEM_LOCATION_TYPE_UNREGISTERED;
  }
  return ACL_SUCCESS;
}

aclError emuMemset(void* pointer, size_t maxCount, int32_t value, size_t count) {
  KVIO_EMULATION_ENTER("aclrtMemset");
  KVIO_EMULATION_NEEDS_CONTEXT("aclrtMemset");
  if (pointer == nullptr || count > maxCount) {
    return reject(s, ACL_ERROR_INVALID_PARAM, "aclrtMemset(%p, maxCount %zu, count %zu)", pointer,
                  maxCount, count);
  }
  aclError e = checkSide(s, device, "devPtr", reinterpret_cast<uint64_t>(pointer), count, true);
  if (e == ACL_SUCCESS) e = refuseUnsafeCall(s, "aclrtMemset");
  if (e != ACL_SUCCESS) return e;
  std::memset(pointer, value, count);
  return ACL_SUCCESS;
}

aclError emuMemcpyAsync(void* dst, size_t destMax, const void* src, size_t count,
                        aclrtMemcpyKind kind, aclrtStream stream) {
  KVIO_EMULATION_ENTER("aclrtMemcpyAsync");
  ++s.counts.memcpyAsync;
  KVIO_EMULATION_NEEDS_CONTEXT("aclrtMemcpyAsync");
  if (const aclError stop = refuseWhenStopped(s, "aclrtMemcpyAsync")) return stop;
  if (dst == nullptr || src == nullptr) {
    return reject(s, ACL_ERROR_INVALID_PARAM, "null %s", dst == nullptr ? "dst" : "src");
  }
  if (count > destMax) {
    return reject(s, ACL_ERROR_INVALID_PARAM, "count %zu > destMax %zu", count, destMax);
  }
  if (count == 0) return reject(s, ACL_ERROR_INVALID_PARAM, "copy of 0 bytes");
  if (!validKind(kind)) return reject(s, ACL_ERROR_INVALID_PARAM, "bad kind %d", kind);
  if (s.refuseUnalignedDeviceCopies && kind == ACL_MEMCPY_DEVICE_TO_DEVICE &&
      (reinterpret_cast<uint64_t>(dst) % 64 != 0 || reinterpret_cast<uint64_t>(src) % 64 != 0)) {
    return reject(s, ACL_ERROR_INVALID_PARAM,
                  "device to device copy of %zu bytes from %p to %p: acl_rt.h asks both "
                  "addresses 64-byte aligned",
                  count, src, dst);
  }
  aclError e = checkStream(s, stream, true);
  if (e == ACL_SUCCESS)
    e = checkSide(s, device, "dst", reinterpret_cast<uint64_t>(dst), count, dstOnDevice(kind));
  if (e == ACL_SUCCESS)
    e = checkSide(s, device, "src", reinterpret_cast<uint64_t>(src), count, srcOnDevice(kind));
  if (e != ACL_SUCCESS) return e;
  if (recordedIntoCapture(s, stream)) return ACL_SUCCESS;
  execute(s, device, reinterpret_cast<uint64_t>(dst), dstOnDevice(kind), count,
          reinterpret_cast<uint64_t>(src), srcOnDevice(kind), count, takeDoomed(s),
          [dst, src, count] { std::memmove(dst, src, count); });
  s.counts.bytesCopied += count;
  s.records.push_back({reinterpret_cast<uint64_t>(dst), count, 1, count});
  return ACL_SUCCESS;
}

aclError emuMemcpy2dAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                          size_t height, aclrtMemcpyKind kind, aclrtStream stream) {
  KVIO_EMULATION_ENTER("aclrtMemcpy2dAsync");
  ++s.counts.memcpy2dAsync;
  KVIO_EMULATION_NEEDS_CONTEXT("aclrtMemcpy2dAsync");
  if (const aclError stop = refuseWhenStopped(s, "aclrtMemcpy2dAsync")) return stop;
  if (dst == nullptr || src == nullptr) {
    return reject(s, ACL_ERROR_INVALID_PARAM, "null %s", dst == nullptr ? "dst" : "src");
  }
  if (width == 0 || height == 0 || width > dpitch || width > spitch) {
    return reject(s, ACL_ERROR_INVALID_PARAM, "width %zu, height %zu, dpitch %zu, spitch %zu",
                  width, height, dpitch, spitch);
  }
  if (height > kMax2dHeight) {
    return reject(s, ACL_ERROR_INVALID_PARAM, "height %zu > 5*1024*1024", height);
  }
  if (width > kMax2dWidth) {
    return reject(s, ACL_ERROR_INVALID_PARAM, "width %zu > 5000000", width);
  }
  if (kind != ACL_MEMCPY_HOST_TO_DEVICE && kind != ACL_MEMCPY_DEVICE_TO_HOST) {
    return reject(s, ACL_ERROR_INVALID_PARAM,
                  "%s: aclrtMemcpy2dAsync copies host to device and device to host only",
                  kindText(kind));
  }
  aclError e = checkStream(s, stream, true);
  const uint64_t d = reinterpret_cast<uint64_t>(dst);
  const uint64_t x = reinterpret_cast<uint64_t>(src);
  if (e == ACL_SUCCESS)
    e = checkSide(s, device, "dst", d, (height - 1) * dpitch + width, dstOnDevice(kind));
  if (e == ACL_SUCCESS)
    e = checkSide(s, device, "src", x, (height - 1) * spitch + width, srcOnDevice(kind));
  if (e != ACL_SUCCESS) return e;
  if (recordedIntoCapture(s, stream)) return ACL_SUCCESS;
  execute(s, device, d, dstOnDevice(kind), (height - 1) * dpitch + width, x, srcOnDevice(kind),
          (height - 1) * spitch + width, takeDoomed(s), [d, x, dpitch, spitch, width, height] {
            for (size_t r = 0; r < height; ++r) {
              std::memmove(reinterpret_cast<void*>(d + r * dpitch),
                           reinterpret_cast<const void*>(x + r * spitch), width);
            }
          });
  s.counts.bytesCopied += width * height;
  s.records.push_back({d, width, height, dpitch});
  return ACL_SUCCESS;
}

aclError emuMemcpyBatchAsync(void** dsts, size_t* destMaxs, void** srcs, size_t* sizes,
                             size_t count, aclrtMemcpyBatchAttr* attrs, size_t* attrIndexes,
                             size_t numAttrs, size_t* failIndex, aclrtStream stream) {
  KVIO_EMULATION_ENTER("aclrtMemcpyBatchAsync");
  ++s.counts.memcpyBatchAsync;
  KVIO_EMULATION_NEEDS_CONTEXT("aclrtMemcpyBatchAsync");
  if (const aclError stop = refuseWhenStopped(s, "aclrtMemcpyBatchAsync")) return stop;
  if (s.batchResult != ACL_SUCCESS) {
    ++s.counts.rejected;
    return s.batchResult;
  }
  if (dsts == nullptr || destMaxs == nullptr || srcs == nullptr || sizes == nullptr ||
      attrs == nullptr || attrIndexes == nullptr || failIndex == nullptr || count == 0 ||
      numAttrs == 0 || attrIndexes[0] != 0) {
    return reject(s, ACL_ERROR_INVALID_PARAM, "malformed batch of %zu copies, %zu attributes",
                  count, numAttrs);
  }
  aclError e = checkStream(s, stream, true);
  if (e != ACL_SUCCESS) return e;
  // One direction per batch, host to device or device to host (the API reference).
  for (size_t k = 0; k < numAttrs; ++k) {
    const bool dstDevice = attrs[k].dstLoc.type == ACL_MEM_LOCATION_TYPE_DEVICE;
    const bool srcDevice = attrs[k].srcLoc.type == ACL_MEM_LOCATION_TYPE_DEVICE;
    const bool sameAsFirst = dstDevice == (attrs[0].dstLoc.type == ACL_MEM_LOCATION_TYPE_DEVICE) &&
                             srcDevice == (attrs[0].srcLoc.type == ACL_MEM_LOCATION_TYPE_DEVICE);
    if (dstDevice == srcDevice || !sameAsFirst) {
      return reject(s, ACL_ERROR_INVALID_PARAM,
                    "batch attribute %zu: aclrtMemcpyBatchAsync copies host to device or device "
                    "to host only, one direction per batch",
                    k);
    }
  }
  // Check every copy first: a rejected batch copies nothing.
  size_t a = 0;
  for (size_t i = 0; i < count; ++i) {
    while (a + 1 < numAttrs && attrIndexes[a + 1] <= i) ++a;
    const aclrtMemcpyBatchAttr& attr = attrs[a];
    *failIndex = i;
    if (dsts[i] == nullptr || srcs[i] == nullptr || sizes[i] == 0 || sizes[i] > destMaxs[i]) {
      return reject(s, ACL_ERROR_INVALID_PARAM, "batch copy %zu: size %zu, destMax %zu", i,
                    sizes[i], destMaxs[i]);
    }
    e = checkSide(s, device, "dst", reinterpret_cast<uint64_t>(dsts[i]), sizes[i],
                  attr.dstLoc.type == ACL_MEM_LOCATION_TYPE_DEVICE);
    if (e == ACL_SUCCESS) {
      e = checkSide(s, device, "src", reinterpret_cast<uint64_t>(srcs[i]), sizes[i],
                    attr.srcLoc.type == ACL_MEM_LOCATION_TYPE_DEVICE);
    }
    if (e != ACL_SUCCESS) return e;
  }
  *failIndex = SIZE_MAX;
  if (recordedIntoCapture(s, stream)) return ACL_SUCCESS;
  // The copies of a batch run in no particular order (the API reference): here last to first,
  // so that a caller relying on the order of its entries gets other bytes.
  // failTask counts the entries in the caller's order.
  std::vector<size_t> attributeOf(count);
  std::vector<char> doomed(count);
  a = 0;
  for (size_t i = 0; i < count; ++i) {
    doomed[i] = takeDoomed(s) ? 1 : 0;
    while (a + 1 < numAttrs && attrIndexes[a + 1] <= i) ++a;
    attributeOf[i] = a;
  }
  for (size_t i = count; i-- > 0;) {
    const aclrtMemcpyBatchAttr& attr = attrs[attributeOf[i]];
    void* d = dsts[i];
    void* x = srcs[i];
    const size_t n = sizes[i];
    execute(s, device, reinterpret_cast<uint64_t>(d),
            attr.dstLoc.type == ACL_MEM_LOCATION_TYPE_DEVICE, n, reinterpret_cast<uint64_t>(x),
            attr.srcLoc.type == ACL_MEM_LOCATION_TYPE_DEVICE, n, doomed[i] != 0,
            [d, x, n] { std::memmove(d, x, n); });
    s.counts.bytesCopied += sizes[i];
    s.records.push_back({reinterpret_cast<uint64_t>(dsts[i]), sizes[i], 1, sizes[i]});
  }
  s.counts.batchedCopies += static_cast<int64_t>(count);
  return ACL_SUCCESS;
}

// Answers whether `stream` is being captured (setCapture); needs no context. A model handle
// stands for the graph while the capture is active.
aclError emuCaptureGetInfo(aclrtStream stream, aclmdlRICaptureStatus* status, aclmdlRI* model) {
  KVIO_EMULATION_ENTER("aclmdlRICaptureGetInfo");
  ++s.counts.captureGetInfo;
  if (s.captureInfoResult != ACL_SUCCESS) {
    return reject(s, s.captureInfoResult,
                  "aclmdlRICaptureGetInfo answers %d (setCaptureInfoResult)", s.captureInfoResult);
  }
  if (status == nullptr || model == nullptr) {
    return reject(s, ACL_ERROR_INVALID_PARAM, "aclmdlRICaptureGetInfo: null status or modelRI");
  }
  const aclError e = checkStream(s, stream);
  if (e != ACL_SUCCESS) return e;
  auto it = s.captures.find(reinterpret_cast<uint64_t>(stream));
  *status = it == s.captures.end() ? ACL_MODEL_RI_CAPTURE_STATUS_NONE : it->second.status;
  *model =
      *status == ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE ? reinterpret_cast<aclmdlRI>(0xC0DE) : nullptr;
  return ACL_SUCCESS;
}

// Sets the calling thread's capture mode and answers the one it had.
aclError emuCaptureThreadExchangeMode(aclmdlRICaptureMode* mode) {
  KVIO_EMULATION_ENTER("aclmdlRICaptureThreadExchangeMode");
  if (mode == nullptr || *mode < ACL_MODEL_RI_CAPTURE_MODE_GLOBAL ||
      *mode > ACL_MODEL_RI_CAPTURE_MODE_RELAXED) {
    return reject(s, ACL_ERROR_INVALID_PARAM, "aclmdlRICaptureThreadExchangeMode: bad mode");
  }
  std::swap(*mode, threadCaptureMode);
  return ACL_SUCCESS;
}

// Returns and clears the calling thread's recent error text, as aclGetRecentErrMsg does.
const char* emuRecentErrMsg() {
  thread_local std::string copy;
  copy.swap(threadRecent);
  threadRecent.clear();
  return copy.c_str();
}

// Runs f on the emulation's state under its lock; returns what f returns.
template <class F>
auto withState(F&& f) -> decltype(f(state())) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return f(s);
}

}  // namespace

AclHostEmulation& AclHostEmulation::instance() {
  static AclHostEmulation* e = new AclHostEmulation();
  return *e;
}

AclApi AclHostEmulation::table(bool withBatch, bool withRegisterV2,
                               bool withPointerAttributes) const {
  AclApi a;
  a.origin = "the ACL host emulation of the tests";
  a.init = emuInit;
  a.setDevice = emuSetDevice;
  a.getDeviceCount = emuGetDeviceCount;
  a.createStream = emuCreateStream;
  a.destroyStream = emuDestroyStream;
  a.synchronizeStream = emuSynchronizeStream;
  a.createEvent = emuCreateEvent;
  a.recordEvent = emuRecordEvent;
  a.queryEventStatus = emuQueryEventStatus;
  a.synchronizeEvent = emuSynchronizeEvent;
  a.destroyEvent = emuDestroyEvent;
  a.malloc = emuMalloc;
  a.free = emuFree;
  a.mallocHost = emuMallocHost;
  a.freeHost = emuFreeHost;
  a.hostRegister = emuHostRegister;
  a.hostUnregister = emuHostUnregister;
  a.memset = emuMemset;
  a.memcpyAsync = emuMemcpyAsync;
  a.memcpy2dAsync = emuMemcpy2dAsync;
  a.memcpyBatchAsync = withBatch ? emuMemcpyBatchAsync : nullptr;
  a.getRecentErrMsg = emuRecentErrMsg;
  a.getCurrentContext = emuGetCurrentContext;
  a.setCurrentContext = emuSetCurrentContext;
  a.getDevice = emuGetDevice;
  a.hostRegisterV2 = withRegisterV2 ? emuHostRegisterV2 : nullptr;
  a.pointerGetAttributes = withPointerAttributes ? emuPointerGetAttributes : nullptr;
  a.captureGetInfo = emuCaptureGetInfo;
  a.captureThreadExchangeMode = emuCaptureThreadExchangeMode;
  return a;
}

void AclHostEmulation::install(bool withBatch, bool withRegisterV2, bool withPointerAttributes) {
  reset();
  const AclApi a = table(withBatch, withRegisterV2, withPointerAttributes);
  if (kvio_test_ascend_runtime(&a, sizeof(a)) != KVIO_STATUS_OK) {
    std::fprintf(stderr, "kvio_test_ascend_runtime failed: %s\n", kvio_last_error());
    std::abort();
  }
}

void AclHostEmulation::uninstall() {
  kvio_test_ascend_runtime(nullptr, 0);
}

void AclHostEmulation::reset() {
  withState([&](State& s) {
    s.counts = AclCallCounts{};
    s.records.clear();
    s.failures.clear();
    s.batchResult = ACL_SUCCESS;
    s.refuseUnalignedDeviceCopies = false;
    s.deviceCount = 1;
    s.recent.clear();
    s.holding = false;
    s.deferring = false;
    s.deferredQueries = 0;
    s.beforeFreeHost = nullptr;
    // A stopped context's work is dropped, the events it held complete (a fresh device).
    s.stopOnFailure = false;
    s.failTaskNth = -1;
    if (s.stopped != ACL_SUCCESS) s.held.clear();
    s.stopped = ACL_SUCCESS;
    runHeld(s);
    s.streamError = ACL_SUCCESS;
    s.faults = 0;
    s.faultMessage.clear();
    s.setDeviceCalls.clear();
    s.captures.clear();
    // The calling thread's (the test's): a test that left it RELAXED would let later ones pass.
    kvio_test::threadCaptureMode = ACL_MODEL_RI_CAPTURE_MODE_GLOBAL;
    s.recorded.insert(s.capturedEvents.begin(), s.capturedEvents.end());
    s.capturedEvents.clear();
    s.captureInfoResult = ACL_SUCCESS;
  });
}

AclCallCounts AclHostEmulation::counts() const {
  return withState([&](State& s) { return s.counts; });
}

std::vector<AclCopyRecord> AclHostEmulation::records() const {
  return withState([&](State& s) { return s.records; });
}

std::shared_ptr<void> AclHostEmulation::tagDevice(void* data, uint64_t bytes, int32_t device) {
  State& s = state();
  const uint64_t address = reinterpret_cast<uint64_t>(data);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.memory[address] = Range{bytes, Place::Device, device};
  }
  return std::shared_ptr<void>(data, [address](void*) {
    State& st = state();
    std::lock_guard<std::mutex> lock(st.mutex);
    st.memory.erase(address);
  });
}

std::shared_ptr<void> AclHostEmulation::tagPinnedHost(void* data, uint64_t bytes) {
  State& s = state();
  const uint64_t address = reinterpret_cast<uint64_t>(data);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.memory[address] = Range{bytes, Place::PinnedHost, -1};
  }
  return std::shared_ptr<void>(data, [address](void*) {
    State& st = state();
    std::lock_guard<std::mutex> lock(st.mutex);
    st.memory.erase(address);
  });
}

void AclHostEmulation::setDeviceCount(uint32_t count) {
  withState([&](State& s) { s.deviceCount = count; });
}

void AclHostEmulation::setBatchResult(aclError result) {
  withState([&](State& s) { s.batchResult = result; });
}

void AclHostEmulation::failCall(const std::string& function, int64_t nth, aclError error) {
  withState([&](State& s) { s.failures[function] = {nth, error}; });
}

void AclHostEmulation::failTask(int64_t nth) {
  withState([&](State& s) { s.failTaskNth = nth; });
}

void AclHostEmulation::stopOnFailure(bool stop) {
  withState([&](State& s) { s.stopOnFailure = stop; });
}

void AclHostEmulation::setCapture(void* stream, aclmdlRICaptureStatus status,
                                  aclmdlRICaptureMode mode) {
  withState([&](State& s) {
    if (status != ACL_MODEL_RI_CAPTURE_STATUS_NONE) {
      s.captures[reinterpret_cast<uint64_t>(stream)] =
          State::Capture{status, mode, std::this_thread::get_id()};
      return;
    }
    s.captures.erase(reinterpret_cast<uint64_t>(stream));
    s.recorded.insert(s.capturedEvents.begin(), s.capturedEvents.end());
    s.capturedEvents.clear();
  });
}

aclmdlRICaptureStatus AclHostEmulation::captureStatus(void* stream) const {
  return withState([&](State& s) {
    auto it = s.captures.find(reinterpret_cast<uint64_t>(stream));
    return it == s.captures.end() ? ACL_MODEL_RI_CAPTURE_STATUS_NONE : it->second.status;
  });
}

aclmdlRICaptureMode AclHostEmulation::threadCaptureMode() const {
  return kvio_test::threadCaptureMode;
}

void AclHostEmulation::setCaptureInfoResult(aclError result) {
  withState([&](State& s) { s.captureInfoResult = result; });
}

void AclHostEmulation::refuseUnalignedDeviceCopies(bool refuse) {
  withState([&](State& s) { s.refuseUnalignedDeviceCopies = refuse; });
}

void AclHostEmulation::beforeFreeHost(std::function<void()> hook) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.beforeFreeHost = std::move(hook);
}

void AclHostEmulation::holdStream() {
  withState([&](State& s) { s.holding = true; });
}

void AclHostEmulation::releaseStream() {
  withState([&](State& s) {
    s.holding = false;
    s.deferring = false;
    runHeld(s);
  });
}

void AclHostEmulation::deferWork() {
  withState([&](State& s) {
    s.holding = true;
    s.deferring = true;
  });
}

int64_t AclHostEmulation::faults(std::string* message) const {
  return withState([&](State& s) {
    if (message != nullptr) *message = s.faultMessage;
    return s.faults;
  });
}

AclHostEmulation::Live AclHostEmulation::live() const {
  return withState([&](State& s) {
    Live l{static_cast<int64_t>(s.streams.size()), static_cast<int64_t>(s.events.size()),
           s.deviceAllocations, 0, 0};
    for (const auto& entry : s.memory) {
      if (entry.second.place == Place::PinnedHost) ++l.hostAllocations;
    }
    l.registrations = static_cast<int64_t>(s.registrations.size());
    return l;
  });
}

int64_t AclHostEmulation::registrations(int32_t device) const {
  return withState([&](State& s) {
    int64_t count = 0;
    for (const auto& entry : s.registrations) count += entry.second.device == device ? 1 : 0;
    return count;
  });
}

int64_t AclHostEmulation::setDeviceCalls(int32_t device) const {
  return withState([&](State& s) {
    auto it = s.setDeviceCalls.find(device);
    return it == s.setDeviceCalls.end() ? 0 : it->second;
  });
}

void* AclHostEmulation::defaultContext(int32_t device) {
  return withState(
      [&](State& s) { return reinterpret_cast<void*>(kvio_test::defaultContext(s, device)); });
}

void* AclHostEmulation::createContext(int32_t device) {
  return withState([&](State& s) {
    const uint64_t handle = s.nextHandle++;
    s.contexts[handle] = Ctx{device, false};
    return reinterpret_cast<void*>(handle);
  });
}

void* AclHostEmulation::threadContext() const {
  return reinterpret_cast<void*>(currentContext);
}

void AclHostEmulation::setThreadContext(void* context) {
  currentContext = reinterpret_cast<uint64_t>(context);
}

int32_t AclHostEmulation::contextDevice(void* context) const {
  return withState([&](State& s) {
    auto it = s.contexts.find(reinterpret_cast<uint64_t>(context));
    return it == s.contexts.end() ? -1 : it->second.device;
  });
}

std::string AclHostEmulation::recentError() const {
  return withState([&](State& s) { return s.recent; });
}

}  // namespace kvio_test
