// The CPU fake of the CUDA runtime and of the driver calls resolved through it (fake_cuda.hpp:
// what it enforces and what it does not model). One global lock guards contexts, allocations,
// streams' registry and capture state; each stream has its own queue, lock and worker thread.
// Nothing waits for a stream while holding the global lock (a stream's work takes it to check
// addresses). State is never destroyed: worker threads may outlive static destruction.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "fake_cuda.hpp"

namespace kvio_fake_cuda {

cudaError_t injected(const char* call);  // failCall's armed failure (defined below)

namespace {

struct Stream;

struct Context {
  int device = 0;
  bool primary = false;
  std::atomic<int> sticky{cudaSuccess};  // an error that ended the context
  std::shared_ptr<Stream> legacy;        // its legacy default stream, made at first use
  std::vector<std::weak_ptr<Stream>> blocking;
};

enum class Kind { Device, HostAllocated, HostRegistered };

struct Allocation {
  uint64_t start = 0;
  uint64_t bytes = 0;
  Kind kind = Kind::Device;
  int device = 0;
  Context* context = nullptr;  // device memory of no context: stream-ordered allocations
  bool mapped = false;         // host memory with a device address
  void* base = nullptr;        // what to free
};

struct Graph {
  size_t nodes = 0;
};

struct Op {
  std::vector<std::pair<std::shared_ptr<Stream>, uint64_t>> after;  // work of streams to wait for
  std::function<cudaError_t()> run;  // an error it returns ends the context
};

struct Stream {
  Context* context = nullptr;
  bool blocking = true;  // synchronizes with the legacy stream
  bool legacy = false;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Op> queue;
  uint64_t enqueued = 0;
  uint64_t completed = 0;
  bool stopping = false;
  std::thread worker;
  // Capture, under the global lock.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cudaStreamCaptureMode captureMode = cudaStreamCaptureModeGlobal;
  std::thread::id captureThread;
  Graph* graph = nullptr;
};

struct Event {
  Context* context = nullptr;
  std::shared_ptr<Stream> stream;  // where it was last recorded
  uint64_t position = 0;           // the stream's work to complete
  bool captured = false;           // last recorded into a capture: not to be queried or waited
  std::weak_ptr<Stream> capture;   // that capture's stream
};

std::mutex& globalLock() {
  static std::mutex* m = new std::mutex;
  return *m;
}
std::map<uint64_t, Allocation>& allocations() {
  static auto* a = new std::map<uint64_t, Allocation>;
  return *a;
}
std::map<Stream*, std::shared_ptr<Stream>>& streams() {
  static auto* s = new std::map<Stream*, std::shared_ptr<Stream>>;
  return *s;
}
// Every stream made (created, legacy and per-thread ones), for synchronisation and capture rules.
std::vector<std::weak_ptr<Stream>>& everyStream() {
  static auto* s = new std::vector<std::weak_ptr<Stream>>;
  return *s;
}
std::set<Event*>& events() {
  static auto* e = new std::set<Event*>;
  return *e;
}
std::set<Context*>& contexts() {
  static auto* c = new std::set<Context*>;
  return *c;
}

int deviceCount() {
  static const int count = [] {
    const char* value = std::getenv("KVIO_FAKE_CUDA_DEVICES");
    return value != nullptr ? std::min(64, std::max(0, std::atoi(value))) : 2;  // primary()
  }();
  return count;
}

thread_local cudaError_t lastError = cudaSuccess;
thread_local std::vector<Context*> contextStack;
thread_local cudaStreamCaptureMode threadCaptureMode = cudaStreamCaptureModeGlobal;

cudaError_t fail(cudaError_t error) {
  if (error != cudaSuccess) lastError = error;
  return error;
}

Context* primary(int device) {  // under the global lock
  static Context* primaries[64] = {};
  if (primaries[device] == nullptr) {
    primaries[device] = new Context;
    primaries[device]->device = device;
    primaries[device]->primary = true;
    contexts().insert(primaries[device]);
  }
  return primaries[device];
}

Context* current() {
  return contextStack.empty() ? nullptr : contextStack.back();
}

// The context runtime calls use: the current one, else device 0's primary context made current.
Context* runtimeContext() {  // under the global lock
  if (contextStack.empty()) contextStack.push_back(primary(0));
  return contextStack.back();
}

cudaError_t stickyOf(const Context* context) {
  return context == nullptr ? cudaSuccess : static_cast<cudaError_t>(context->sticky.load());
}

// The start of a runtime call: the runtime's context made current if none is, and its sticky
// error (a context a fault ended answers every call with it).
cudaError_t enter() {  // under the global lock
  return stickyOf(runtimeContext());
}

void work(Stream* s) {
  for (;;) {
    Op op;
    {
      std::unique_lock<std::mutex> lock(s->mutex);
      s->changed.wait(lock, [&] { return s->stopping || !s->queue.empty(); });
      if (s->queue.empty()) return;
      op = std::move(s->queue.front());
      s->queue.pop_front();
    }
    for (auto& dependency : op.after) {
      Stream* d = dependency.first.get();
      std::unique_lock<std::mutex> lock(d->mutex);
      d->changed.wait(lock, [&] { return d->completed >= dependency.second; });
    }
    if (s->context->sticky.load() == cudaSuccess) {
      const cudaError_t error = op.run();
      int expected = cudaSuccess;
      if (error != cudaSuccess) s->context->sticky.compare_exchange_strong(expected, error);
    }
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      ++s->completed;
    }
    s->changed.notify_all();
  }
}

std::shared_ptr<Stream> makeStream(Context* context, bool blocking, bool legacy) {
  auto s = std::make_shared<Stream>();
  s->context = context;
  s->blocking = blocking;
  s->legacy = legacy;
  s->worker = std::thread(work, s.get());
  if (blocking && !legacy) context->blocking.push_back(s);
  auto& every = everyStream();
  every.erase(std::remove_if(every.begin(), every.end(),
                             [](const std::weak_ptr<Stream>& w) { return w.expired(); }),
              every.end());
  every.push_back(s);
  auto& blockingStreams = context->blocking;
  blockingStreams.erase(std::remove_if(blockingStreams.begin(), blockingStreams.end(),
                                       [](const std::weak_ptr<Stream>& w) { return w.expired(); }),
                        blockingStreams.end());
  return s;
}

uint64_t enqueuedOf(Stream* s) {
  std::lock_guard<std::mutex> lock(s->mutex);
  return s->enqueued;
}

void waitFor(Stream* s, uint64_t position) {
  std::unique_lock<std::mutex> lock(s->mutex);
  s->changed.wait(lock, [&] { return s->completed >= position; });
}

void drain(Stream* s) {
  waitFor(s, enqueuedOf(s));
}

void stop(const std::shared_ptr<Stream>& s) {
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    s->stopping = true;
  }
  s->changed.notify_all();
  s->worker.join();
}

// The per-thread default stream of each context this thread used, ended when the thread ends.
struct PerThreadStreams {
  std::map<Context*, std::shared_ptr<Stream>> byContext;
  bool ended = false;  // a later thread_local destructor gets no new stream
  ~PerThreadStreams() {
    ended = true;
    for (auto& entry : byContext) {
      drain(entry.second.get());
      stop(entry.second);
    }
  }
};
thread_local PerThreadStreams perThread;

// The stream a handle names in the current context (legacy and per-thread handles included);
// nullptr for an unknown handle. Under the global lock.
std::shared_ptr<Stream> resolve(cudaStream_t handle) {
  Context* context = runtimeContext();
  if (handle == nullptr || handle == cudaStreamLegacy) {
    if (!context->legacy) context->legacy = makeStream(context, true, true);
    return context->legacy;
  }
  if (handle == cudaStreamPerThread) {
    if (perThread.ended) return nullptr;
    std::shared_ptr<Stream>& s = perThread.byContext[context];
    if (!s) s = makeStream(context, true, false);
    return s;
  }
  auto found = streams().find(reinterpret_cast<Stream*>(handle));
  return found == streams().end() ? nullptr : found->second;
}

bool capturing(const Stream* s) {
  return s->capture != cudaStreamCaptureStatusNone;
}

// The blocking streams of the legacy stream's context that are capturing (under the lock).
std::vector<std::shared_ptr<Stream>> capturingBeside(const Stream* legacy) {
  std::vector<std::shared_ptr<Stream>> found;
  for (auto& weak : legacy->context->blocking) {
    std::shared_ptr<Stream> s = weak.lock();
    if (s && capturing(s.get())) found.push_back(s);
  }
  return found;
}

// A "potentially unsafe" call on this thread: refused, and the captures that forbid it
// invalidated, where the thread's capture mode says so (cudaThreadExchangeStreamCaptureMode).
cudaError_t unsafeCall() {  // under the global lock
  if (threadCaptureMode == cudaStreamCaptureModeRelaxed) return cudaSuccess;
  bool prohibited = false;
  for (auto& weak : everyStream()) {
    std::shared_ptr<Stream> held = weak.lock();
    Stream* s = held.get();
    if (s == nullptr || s->capture != cudaStreamCaptureStatusActive ||
        s->captureMode == cudaStreamCaptureModeRelaxed) {
      continue;
    }
    const bool own = s->captureThread == std::this_thread::get_id();
    if (own || (threadCaptureMode == cudaStreamCaptureModeGlobal &&
                s->captureMode == cudaStreamCaptureModeGlobal)) {
      s->capture = cudaStreamCaptureStatusInvalidated;
      prohibited = true;
    }
  }
  return prohibited ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

// Queues `run` on `s` (under the global lock): recorded as a node while it captures; on the
// legacy stream after the blocking streams' work, on a blocking stream after the legacy one's.
// `position` (optional): the stream's work to complete for this op.
cudaError_t enqueue(const std::shared_ptr<Stream>& s, std::function<cudaError_t()> run,
                    uint64_t* position = nullptr) {
  const cudaError_t sticky = stickyOf(s->context);
  if (sticky != cudaSuccess) return sticky;
  if (s->capture == cudaStreamCaptureStatusInvalidated) return cudaErrorStreamCaptureInvalidated;
  if (s->capture == cudaStreamCaptureStatusActive) {
    ++s->graph->nodes;
    return cudaSuccess;
  }
  Op op;
  op.run = std::move(run);
  if (s->legacy) {
    const auto captures = capturingBeside(s.get());
    if (!captures.empty()) {
      for (auto& c : captures) c->capture = cudaStreamCaptureStatusInvalidated;
      return cudaErrorStreamCaptureImplicit;
    }
    for (auto& weak : s->context->blocking) {
      std::shared_ptr<Stream> b = weak.lock();
      if (b) op.after.emplace_back(b, enqueuedOf(b.get()));
    }
  } else if (s->blocking && s->context->legacy) {
    op.after.emplace_back(s->context->legacy, enqueuedOf(s->context->legacy.get()));
  }
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    s->queue.push_back(std::move(op));
    ++s->enqueued;
    if (position != nullptr) *position = s->enqueued;
  }
  s->changed.notify_all();
  return cudaSuccess;
}

std::vector<std::shared_ptr<Stream>> allStreams(int device) {  // under the global lock
  std::vector<std::shared_ptr<Stream>> all;
  for (auto& weak : everyStream()) {
    std::shared_ptr<Stream> s = weak.lock();
    if (s && (device < 0 || s->context->device == device)) all.push_back(s);
  }
  return all;
}

// Waits for all work queued so far (cudaFree, cudaFreeHost, cudaHostUnregister synchronize).
void synchronizeAll(std::unique_lock<std::mutex>* lock, int device) {
  const auto all = allStreams(device);
  std::vector<uint64_t> positions;
  for (auto& s : all) positions.push_back(enqueuedOf(s.get()));
  lock->unlock();
  for (size_t i = 0; i < all.size(); ++i) waitFor(all[i].get(), positions[i]);
  lock->lock();
}

const Allocation* find(uint64_t address) {  // under the global lock
  auto& all = allocations();
  auto it = all.upper_bound(address);
  if (it == all.begin()) return nullptr;
  --it;
  return address < it->second.start + it->second.bytes ? &it->second : nullptr;
}

bool overlaps(uint64_t address, uint64_t bytes) {
  auto& all = allocations();
  auto it = all.lower_bound(address + bytes);
  if (it == all.begin()) return false;
  --it;
  return it->second.start + it->second.bytes > address;
}

// Whole pages of their own (mmap), as device memory and pinned allocations never share a page
// with the heap's memory, which a caller may register.
uint64_t mappedBytes(uint64_t bytes) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return (std::max<uint64_t>(bytes, 1) + page - 1) / page * page;
}

// Freed mappings kept for reuse by size (under the global lock), at most kKeptMappings: tests
// that allocate and free large pools in a loop then pay no page faults for each.
constexpr size_t kKeptMappings = 8;
std::multimap<uint64_t, void*>& keptMappings() {
  static auto* kept = new std::multimap<uint64_t, void*>;
  return *kept;
}

// Filled with `fill`, not zero: memory the runtime gives out starts undefined.
void* allocateBytes(uint64_t bytes, int fill) {  // under the global lock
  const uint64_t size = mappedBytes(bytes);
  void* p = nullptr;
  auto kept = keptMappings().find(size);
  if (kept != keptMappings().end()) {
    p = kept->second;
    keptMappings().erase(kept);
  } else {
    p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
  }
  std::memset(p, fill, bytes);
  return p;
}

void freeBytes(const Allocation& a) {  // under the global lock
  if (keptMappings().size() < kKeptMappings) {
    keptMappings().emplace(mappedBytes(a.bytes), a.base);
  } else {
    munmap(a.base, mappedBytes(a.bytes));
  }
}

// One side of a copy: inside one allocation when it starts in one (else pageable host memory,
// refused where device memory is required).
cudaError_t checkSide(uint64_t address, uint64_t bytes, bool deviceSide, bool* pageable) {
  const Allocation* a = find(address);
  if (a == nullptr) {
    if (deviceSide) return cudaErrorInvalidValue;
    *pageable = true;
    return cudaSuccess;
  }
  if (bytes > a->start + a->bytes - address) return cudaErrorInvalidValue;
  if (deviceSide && a->kind != Kind::Device && !a->mapped) return cudaErrorInvalidValue;
  return cudaSuccess;
}

struct Copy {
  uint64_t dst, src, bytes;
};

// Queues copies on `handle`'s stream; with pageable memory on either side, returns once done.
// Test hooks (takeCopyStreams, delayCopies), under globalLock().
std::vector<cudaStream_t>& copyStreams() {
  static auto* s = new std::vector<cudaStream_t>;
  return *s;
}
int64_t copyDelayUs = 0;
std::vector<cudaStream_t>& delayedStreams() {
  static auto* s = new std::vector<cudaStream_t>;
  return *s;
}

cudaError_t queueCopies(cudaStream_t handle, std::vector<Copy> copies, bool pageable,
                        std::unique_lock<std::mutex>* lock) {
  std::shared_ptr<Stream> s = resolve(handle);
  if (!s) return cudaErrorInvalidResourceHandle;
  if (pageable && capturing(s.get())) {
    s->capture = cudaStreamCaptureStatusInvalidated;
    return cudaErrorStreamCaptureUnsupported;
  }
  if (std::find(copyStreams().begin(), copyStreams().end(), handle) == copyStreams().end()) {
    copyStreams().push_back(handle);
  }
  const bool delayed =
      std::find(delayedStreams().begin(), delayedStreams().end(), handle) != delayedStreams().end();
  const int64_t delayUs = delayed ? copyDelayUs : 0;
  uint64_t position = 0;
  const cudaError_t error = enqueue(
      s,
      [copies = std::move(copies), delayUs] {
        if (delayUs > 0) std::this_thread::sleep_for(std::chrono::microseconds(delayUs));
        for (const Copy& c : copies) {
          std::memmove(reinterpret_cast<void*>(c.dst), reinterpret_cast<const void*>(c.src),
                       c.bytes);
        }
        return cudaSuccess;
      },
      &position);
  if (error != cudaSuccess || !pageable || position == 0) return error;
  lock->unlock();
  waitFor(s.get(), position);
  lock->lock();
  return stickyOf(s->context);
}

cudaError_t memcpyKind(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                       cudaStream_t stream, bool wait) {
  std::unique_lock<std::mutex> lock(globalLock());
  Context* context = runtimeContext();
  if (stickyOf(context) != cudaSuccess) return fail(stickyOf(context));
  if (count == 0) return cudaSuccess;
  bool pageable = false;
  const bool dstDevice = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool srcDevice = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  cudaError_t error = checkSide(reinterpret_cast<uint64_t>(dst), count, dstDevice, &pageable);
  if (error == cudaSuccess) {
    error = checkSide(reinterpret_cast<uint64_t>(src), count, srcDevice, &pageable);
  }
  if (error != cudaSuccess) return fail(error);
  if (wait) {
    error = unsafeCall();
    if (error != cudaSuccess) return fail(error);
  }
  error = queueCopies(stream,
                      {{reinterpret_cast<uint64_t>(dst), reinterpret_cast<uint64_t>(src), count}},
                      pageable || wait, &lock);
  return fail(error);
}

std::string describeRange(const char* what, uint64_t address, uint64_t bytes, int device,
                          const char* why) {
  char text[256];
  std::snprintf(text, sizeof(text), "%s (%llu bytes at 0x%llx) %s device %d", what,
                static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(address),
                why, device);
  return text;
}

class DeviceReach : public Reachability {
 public:
  explicit DeviceReach(int device) : device_(device) {}
  std::string check(const char* what, uint64_t address, uint64_t bytes) const override {
    if (bytes == 0) return {};
    const Allocation* a = nullptr;
    for (const Allocation* c : cached_) {
      if (c != nullptr && address >= c->start && address - c->start < c->bytes) a = c;
    }
    if (a == nullptr) {
      a = find(address);
      cached_[next_] = a;  // a source and a destination in turn: two entries
      next_ ^= 1;
    }
    if (a == nullptr) return describeRange(what, address, bytes, device_, "is not memory of");
    if (a->kind != Kind::Device) {  // mapped host memory: every byte, through adjacent mappings
      uint64_t at = address;
      const uint64_t end = address + bytes;
      for (const Allocation* m = a; at < end; m = find(at)) {
        if (m == nullptr || m->kind == Kind::Device || !m->mapped) {
          return describeRange(what, address, bytes, device_, "is not all mapped host memory, for");
        }
        at = m->start + m->bytes;
      }
      return {};
    }
    if (bytes > a->start + a->bytes - address) {
      return describeRange(what, address, bytes, device_, "runs past its allocation on");
    }
    if (a->device != device_) {
      return describeRange(what, address, bytes, device_, "is another device's memory, not");
    }
    if (a->context != nullptr && !a->context->primary) {
      return describeRange(what, address, bytes, device_,
                           "is memory of a created context, not of the primary context of");
    }
    return {};
  }

 private:
  int device_;
  mutable const Allocation* cached_[2] = {nullptr, nullptr};
  mutable int next_ = 0;
};

// ---- driver calls (reached through cudaGetDriverEntryPointByVersion) ----

CUresult cuCtxGetCurrentFake(CUcontext* out) {
  *out = reinterpret_cast<CUcontext>(current());
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrentFake(CUcontext context) {
  // An injected failure (failCall) answers the driver's code of the same number.
  if (const cudaError_t injectedError = injected("cuCtxSetCurrent")) {
    return static_cast<CUresult>(injectedError);
  }
  std::lock_guard<std::mutex> lock(globalLock());
  Context* c = reinterpret_cast<Context*>(context);
  if (c != nullptr && contexts().count(c) == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (c == nullptr) {
    if (!contextStack.empty()) contextStack.pop_back();
  } else if (contextStack.empty()) {
    contextStack.push_back(c);
  } else {
    contextStack.back() = c;
  }
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetFake(CUdevice* out, int ordinal) {
  if (ordinal < 0 || ordinal >= deviceCount()) return CUDA_ERROR_INVALID_DEVICE;
  *out = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetainFake(CUcontext* out, CUdevice device) {
  if (device < 0 || device >= deviceCount()) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(globalLock());
  *out = reinterpret_cast<CUcontext>(primary(device));
  return CUDA_SUCCESS;
}

CUresult createContext(CUcontext* out, CUdevice device) {
  if (device < 0 || device >= deviceCount()) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(globalLock());
  auto* c = new Context;
  c->device = device;
  contexts().insert(c);
  contextStack.push_back(c);
  *out = reinterpret_cast<CUcontext>(c);
  return CUDA_SUCCESS;
}

CUresult cuCtxCreateV3020(CUcontext* out, unsigned int, CUdevice device) {
  return createContext(out, device);
}

CUresult cuCtxCreateV12050(CUcontext* out, CUctxCreateParams*, unsigned int, CUdevice device) {
  return createContext(out, device);
}

CUresult cuCtxDestroyFake(CUcontext context) {
  std::lock_guard<std::mutex> lock(globalLock());
  Context* c = reinterpret_cast<Context*>(context);
  if (contexts().count(c) == 0 || c->primary) return CUDA_ERROR_INVALID_CONTEXT;
  contexts().erase(c);
  contextStack.erase(std::remove(contextStack.begin(), contextStack.end(), c), contextStack.end());
  static auto* destroyed = new std::vector<Context*>;  // kept: streams and memory may name them
  destroyed->push_back(c);
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrentFake(CUcontext context) {
  std::lock_guard<std::mutex> lock(globalLock());
  Context* c = reinterpret_cast<Context*>(context);
  if (contexts().count(c) == 0) return CUDA_ERROR_INVALID_CONTEXT;
  contextStack.push_back(c);
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrentFake(CUcontext* out) {
  if (contextStack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (out != nullptr) *out = reinterpret_cast<CUcontext>(contextStack.back());
  contextStack.pop_back();
  return CUDA_SUCCESS;
}

// The context a stream belongs to; the special handles (0, legacy, per-thread) name the current
// one (none current: CUDA_ERROR_INVALID_CONTEXT, a driver call binds none). The fake has no
// green contexts: the 12.5 ABI's green context is always none.
CUresult streamContext(CUstream handle, CUcontext* out) {
  std::lock_guard<std::mutex> lock(globalLock());
  const auto stream = reinterpret_cast<cudaStream_t>(handle);
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) {
    if (current() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    *out = reinterpret_cast<CUcontext>(current());
    return CUDA_SUCCESS;
  }
  auto found = streams().find(reinterpret_cast<Stream*>(handle));
  if (found == streams().end()) return CUDA_ERROR_INVALID_HANDLE;
  *out = reinterpret_cast<CUcontext>(found->second->context);
  return CUDA_SUCCESS;
}

CUresult cuStreamGetCtxV9020(CUstream stream, CUcontext* out) {
  return streamContext(stream, out);
}

CUresult cuStreamGetCtxV12050(CUstream stream, CUcontext* out, CUgreenCtx* green) {
  *green = nullptr;
  return streamContext(stream, out);
}

CUresult cuMemAllocFake(CUdeviceptr* out, size_t bytes) {
  std::lock_guard<std::mutex> lock(globalLock());
  Context* c = current();
  if (c == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  void* p = allocateBytes(bytes, 0xA5);
  if (p == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  const uint64_t address = reinterpret_cast<uint64_t>(p);
  allocations()[address] = Allocation{address, bytes, Kind::Device, c->device, c, false, p};
  *out = static_cast<CUdeviceptr>(address);
  return CUDA_SUCCESS;
}

CUresult cuMemFreeFake(CUdeviceptr pointer) {
  std::unique_lock<std::mutex> lock(globalLock());
  auto it = allocations().find(static_cast<uint64_t>(pointer));
  if (it == allocations().end() || it->second.kind != Kind::Device) return CUDA_ERROR_INVALID_VALUE;
  synchronizeAll(&lock, -1);
  it = allocations().find(static_cast<uint64_t>(pointer));
  if (it == allocations().end()) return CUDA_ERROR_INVALID_VALUE;
  freeBytes(it->second);
  allocations().erase(it);
  return CUDA_SUCCESS;
}

CUresult cuPointerGetAttributeFake(void* data, CUpointer_attribute attribute, CUdeviceptr pointer) {
  std::lock_guard<std::mutex> lock(globalLock());
  const Allocation* a = find(static_cast<uint64_t>(pointer));
  if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const bool device = a->kind == Kind::Device;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned int*>(data) = device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = reinterpret_cast<CUcontext>(a->context);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: {
      Context* now = current();
      const bool reachable = device ? (a->context == nullptr || a->context == now ||
                                       (a->context->primary && (now == nullptr || now->primary)))
                                    : a->mapped;
      if (!reachable) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<CUdeviceptr*>(data) = pointer;
      return CUDA_SUCCESS;
    }
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (device) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<void**>(data) = reinterpret_cast<void*>(pointer);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *static_cast<CUdeviceptr*>(data) = static_cast<CUdeviceptr>(a->start);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<size_t*>(data) = static_cast<size_t>(a->bytes);
      return CUDA_SUCCESS;
    default: return CUDA_ERROR_NOT_SUPPORTED;
  }
}

// cuMemcpyBatchAsync: a driver call (a context must be current; it makes none), not on the legacy
// stream, never captured; attribute i applies from attrIdxs[i] (the first 0, increasing).
CUresult batchCopies(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                     CUmemcpyAttributes* attributes, size_t* attributeIndices, size_t numAttributes,
                     size_t* failIndex, CUstream stream) {
  std::unique_lock<std::mutex> lock(globalLock());
  if (failIndex != nullptr) *failIndex = SIZE_MAX;
  if (current() == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (stickyOf(current()) != cudaSuccess) return static_cast<CUresult>(stickyOf(current()));
  const auto handle = reinterpret_cast<cudaStream_t>(stream);
  if (count == 0 || numAttributes == 0 || numAttributes > count || attributes == nullptr ||
      attributeIndices == nullptr || attributeIndices[0] != 0 || handle == nullptr ||
      handle == cudaStreamLegacy) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (size_t a = 0; a < numAttributes; ++a) {
    if ((a > 0 && attributeIndices[a] <= attributeIndices[a - 1]) || attributeIndices[a] >= count ||
        attributes[a].srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_INVALID) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  std::shared_ptr<Stream> s = resolve(handle);
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  if (capturing(s.get())) {
    s->capture = cudaStreamCaptureStatusInvalidated;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  std::vector<Copy> copies;
  bool pageable = false;
  for (size_t i = 0; i < count; ++i) {
    if (sizes[i] == 0 || checkSide(dsts[i], sizes[i], false, &pageable) != cudaSuccess ||
        checkSide(srcs[i], sizes[i], false, &pageable) != cudaSuccess) {
      if (failIndex != nullptr) *failIndex = i;
      return CUDA_ERROR_INVALID_VALUE;
    }
    copies.push_back({dsts[i], srcs[i], sizes[i]});
  }
  // The runtime's and the driver's numbers agree for the errors queueCopies returns.
  return static_cast<CUresult>(queueCopies(handle, std::move(copies), pageable, &lock));
}

CUresult cuMemcpyBatchAsyncV12080(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                  CUmemcpyAttributes* attributes, size_t* indices,
                                  size_t numAttributes, size_t* failIndex, CUstream stream) {
  return batchCopies(dsts, srcs, sizes, count, attributes, indices, numAttributes, failIndex,
                     stream);
}

CUresult cuMemcpyBatchAsyncV13000(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                  CUmemcpyAttributes* attributes, size_t* indices,
                                  size_t numAttributes, CUstream stream) {
  return batchCopies(dsts, srcs, sizes, count, attributes, indices, numAttributes, nullptr, stream);
}

void* driverEntry(const char* symbol, unsigned int version) {
  const std::string name = symbol;
  if (name == "cuCtxGetCurrent") return reinterpret_cast<void*>(cuCtxGetCurrentFake);
  if (name == "cuCtxSetCurrent") return reinterpret_cast<void*>(cuCtxSetCurrentFake);
  if (name == "cuDeviceGet") return reinterpret_cast<void*>(cuDeviceGetFake);
  if (name == "cuDevicePrimaryCtxRetain") {
    return reinterpret_cast<void*>(cuDevicePrimaryCtxRetainFake);
  }
  if (name == "cuCtxCreate") {
    return version >= 12050 ? reinterpret_cast<void*>(cuCtxCreateV12050)
                            : reinterpret_cast<void*>(cuCtxCreateV3020);
  }
  if (name == "cuCtxDestroy") return reinterpret_cast<void*>(cuCtxDestroyFake);
  if (name == "cuCtxPushCurrent") return reinterpret_cast<void*>(cuCtxPushCurrentFake);
  if (name == "cuCtxPopCurrent") return reinterpret_cast<void*>(cuCtxPopCurrentFake);
  if (name == "cuStreamGetCtx") {
    return version >= 12050 ? reinterpret_cast<void*>(cuStreamGetCtxV12050)
                            : reinterpret_cast<void*>(cuStreamGetCtxV9020);
  }
  if (name == "cuMemAlloc") return reinterpret_cast<void*>(cuMemAllocFake);
  if (name == "cuMemFree") return reinterpret_cast<void*>(cuMemFreeFake);
  if (name == "cuPointerGetAttribute") return reinterpret_cast<void*>(cuPointerGetAttributeFake);
  if (name == "cuMemcpyBatchAsync") {
    if (version >= 13000) return reinterpret_cast<void*>(cuMemcpyBatchAsyncV13000);
    if (version >= 12080) return reinterpret_cast<void*>(cuMemcpyBatchAsyncV12080);
  }
  return nullptr;
}

constexpr int kDriverVersion = 13000;

}  // namespace

cudaError_t launch(cudaStream_t handle, const char* kernel,
                   std::function<Fault(const Reachability&)> check, std::function<void()> run) {
  std::unique_lock<std::mutex> lock(globalLock());
  Context* context = runtimeContext();
  if (stickyOf(context) != cudaSuccess) return fail(stickyOf(context));
  std::shared_ptr<Stream> s = resolve(handle);
  if (!s || s->context != context) return fail(cudaErrorInvalidResourceHandle);  // not current
  const std::string name = kernel;
  const int device = s->context->device;
  return fail(enqueue(s, [name, device, check = std::move(check), run = std::move(run)] {
    Fault fault;
    {
      std::lock_guard<std::mutex> held(globalLock());
      DeviceReach reach(device);
      fault = check(reach);
    }
    if (fault.error != cudaSuccess) {
      std::fprintf(stderr, "fake CUDA: kernel %s on device %d: %s: %s\n", name.c_str(), device,
                   cudaGetErrorName(fault.error), fault.what.c_str());
      return fault.error;
    }
    run();
    return cudaSuccess;
  }));
}

namespace {
std::mutex& failuresLock() {
  static auto* m = new std::mutex;
  return *m;
}
std::map<std::string, std::pair<int64_t, cudaError_t>>& failures() {
  static auto* f = new std::map<std::string, std::pair<int64_t, cudaError_t>>;
  return *f;
}
}  // namespace

void failCall(const std::string& call, int64_t nth, cudaError_t error) {
  std::lock_guard<std::mutex> lock(failuresLock());
  failures()[call] = {nth, error};
}

void clearFailures() {
  std::lock_guard<std::mutex> lock(failuresLock());
  failures().clear();
}

int64_t liveAllocations() {
  std::lock_guard<std::mutex> lock(globalLock());
  return static_cast<int64_t>(allocations().size());
}

std::vector<cudaStream_t> takeCopyStreams() {
  std::lock_guard<std::mutex> lock(globalLock());
  std::vector<cudaStream_t> streams;
  streams.swap(copyStreams());
  return streams;
}

void delayCopies(int64_t microseconds, std::vector<cudaStream_t> streams) {
  std::lock_guard<std::mutex> lock(globalLock());
  copyDelayUs = microseconds;
  delayedStreams() = std::move(streams);
}

// The failure failCall armed for this call of `call`, or cudaSuccess.
cudaError_t injected(const char* call) {
  std::lock_guard<std::mutex> lock(failuresLock());
  auto it = failures().find(call);
  if (it == failures().end() || it->second.first-- != 0) return cudaSuccess;
  const cudaError_t error = it->second.second;
  failures().erase(it);
  return error;
}

}  // namespace kvio_fake_cuda

using namespace kvio_fake_cuda;  // NOLINT: the runtime's C functions below

// The start of a runtime call that tests can make fail (failCall): answers the armed error.
#define KVIO_FAKE_INJECTABLE(call) \
  if (const cudaError_t injectedError = injected(call)) return fail(injectedError)

namespace {
std::unique_lock<std::mutex> locked() {
  return std::unique_lock<std::mutex>(globalLock());
}
}  // namespace

// ---- devices, versions, errors ----

cudaError_t cudaGetDeviceCount(int* count) {
  *count = deviceCount();
  return *count == 0 ? fail(cudaErrorNoDevice) : cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= deviceCount()) return fail(cudaErrorInvalidDevice);
  auto lock = locked();
  if (contextStack.empty()) {
    contextStack.push_back(primary(device));
  } else {
    contextStack.back() = primary(device);
  }
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {  // makes no context current
  *device = current() != nullptr ? current()->device : 0;
  return cudaSuccess;
}

// As any runtime call on a thread with no context, taken to bind device 0's primary context
// (the runtime's lazy initialisation): the strict reading, so that kvio asks under its
// DeviceScope (CudaBackends.SubmitsAndWaitsFromAThreadWithoutAContext creates executors there).
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attribute, int device) {
  {
    std::lock_guard<std::mutex> lock(globalLock());
    runtimeContext();
  }
  if (device < 0 || device >= deviceCount()) return fail(cudaErrorInvalidDevice);
  switch (attribute) {
    case cudaDevAttrMaxPitch: *value = INT_MAX; break;
    case cudaDevAttrMultiProcessorCount: *value = 132; break;
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
    case cudaDevAttrUnifiedAddressing:
    case cudaDevAttrCanMapHostMemory: *value = 1; break;
    default: *value = 0; break;
  }
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  *version = kDriverVersion;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaGetLastError() {
  const cudaError_t sticky = stickyOf(current());
  if (sticky != cudaSuccess) return sticky;
  const cudaError_t error = lastError;
  lastError = cudaSuccess;
  return error;
}

cudaError_t cudaPeekAtLastError() {
  const cudaError_t sticky = stickyOf(current());
  return sticky != cudaSuccess ? sticky : lastError;
}

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
#define KVIO_FAKE_NAME(e) \
  case e: return #e;
    KVIO_FAKE_NAME(cudaSuccess)
    KVIO_FAKE_NAME(cudaErrorInvalidValue)
    KVIO_FAKE_NAME(cudaErrorMemoryAllocation)
    KVIO_FAKE_NAME(cudaErrorInitializationError)
    KVIO_FAKE_NAME(cudaErrorInvalidConfiguration)
    KVIO_FAKE_NAME(cudaErrorInvalidDevice)
    KVIO_FAKE_NAME(cudaErrorNoDevice)
    KVIO_FAKE_NAME(cudaErrorInvalidResourceHandle)
    KVIO_FAKE_NAME(cudaErrorNotReady)
    KVIO_FAKE_NAME(cudaErrorIllegalAddress)
    KVIO_FAKE_NAME(cudaErrorMisalignedAddress)
    KVIO_FAKE_NAME(cudaErrorInvalidPitchValue)
    KVIO_FAKE_NAME(cudaErrorHostMemoryAlreadyRegistered)
    KVIO_FAKE_NAME(cudaErrorHostMemoryNotRegistered)
    KVIO_FAKE_NAME(cudaErrorStreamCaptureUnsupported)
    KVIO_FAKE_NAME(cudaErrorStreamCaptureInvalidated)
    KVIO_FAKE_NAME(cudaErrorStreamCaptureImplicit)
    KVIO_FAKE_NAME(cudaErrorStreamCaptureWrongThread)
    KVIO_FAKE_NAME(cudaErrorIllegalState)
    KVIO_FAKE_NAME(cudaErrorNotSupported)
#undef KVIO_FAKE_NAME
    default: return "cudaErrorUnknown";
  }
}

const char* cudaGetErrorString(cudaError_t error) {
  return error == cudaSuccess ? "no error" : "error reported by the fake CUDA runtime";
}

cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** function,
                                             unsigned int version, unsigned long long,
                                             cudaDriverEntryPointQueryResult* status) {
  if (symbol == nullptr || function == nullptr) return fail(cudaErrorInvalidValue);
  *function = driverEntry(symbol, version);
  if (status != nullptr) {
    *status =
        *function != nullptr ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  }
  return cudaSuccess;
}

// ---- memory ----

cudaError_t cudaMalloc(void** pointer, size_t bytes) {
  KVIO_FAKE_INJECTABLE("cudaMalloc");
  auto lock = locked();
  Context* context = runtimeContext();
  if (stickyOf(context) != cudaSuccess) return fail(stickyOf(context));
  const cudaError_t error = unsafeCall();
  if (error != cudaSuccess) return fail(error);
  void* p = allocateBytes(bytes, 0xA5);  // not zero: device memory starts undefined
  if (p == nullptr) return fail(cudaErrorMemoryAllocation);
  const uint64_t address = reinterpret_cast<uint64_t>(p);
  allocations()[address] =
      Allocation{address, bytes, Kind::Device, context->device, context, false, p};
  *pointer = p;
  return cudaSuccess;
}

cudaError_t cudaMallocAsync(void** pointer, size_t bytes, cudaStream_t stream) {
  auto lock = locked();
  std::shared_ptr<Stream> s = resolve(stream);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  if (stickyOf(s->context) != cudaSuccess) return fail(stickyOf(s->context));
  if (s->capture == cudaStreamCaptureStatusInvalidated) {
    return fail(cudaErrorStreamCaptureInvalidated);
  }
  if (s->capture == cudaStreamCaptureStatusActive) ++s->graph->nodes;  // an allocation node
  void* p = allocateBytes(bytes, 0xA5);
  if (p == nullptr) return fail(cudaErrorMemoryAllocation);
  const uint64_t address = reinterpret_cast<uint64_t>(p);
  allocations()[address] =
      Allocation{address, bytes, Kind::Device, s->context->device, nullptr, false, p};
  *pointer = p;
  return cudaSuccess;
}

namespace {
cudaError_t release(void* pointer, Kind kind, cudaError_t wrong) {
  auto lock = locked();
  if (const cudaError_t sticky = enter()) return fail(sticky);
  if (pointer == nullptr) return cudaSuccess;
  cudaError_t error = unsafeCall();
  if (error != cudaSuccess) return fail(error);
  const uint64_t address = reinterpret_cast<uint64_t>(pointer);
  auto it = allocations().find(address);
  if (it == allocations().end() || it->second.kind != kind) return fail(wrong);
  synchronizeAll(&lock, -1);
  it = allocations().find(address);
  if (it == allocations().end()) return fail(wrong);
  if (kind != Kind::HostRegistered) freeBytes(it->second);
  allocations().erase(it);
  return cudaSuccess;
}
}  // namespace

cudaError_t cudaFree(void* pointer) {
  KVIO_FAKE_INJECTABLE("cudaFree");
  return release(pointer, Kind::Device, cudaErrorInvalidValue);
}

cudaError_t cudaHostAlloc(void** pointer, size_t bytes, unsigned int) {
  KVIO_FAKE_INJECTABLE("cudaHostAlloc");
  auto lock = locked();
  Context* context = runtimeContext();
  if (stickyOf(context) != cudaSuccess) return fail(stickyOf(context));
  const cudaError_t error = unsafeCall();
  if (error != cudaSuccess) return fail(error);
  void* p = allocateBytes(bytes, 0x5C);
  if (p == nullptr) return fail(cudaErrorMemoryAllocation);
  const uint64_t address = reinterpret_cast<uint64_t>(p);
  // With unified addressing every pinned allocation is portable and mapped.
  allocations()[address] =
      Allocation{address, bytes, Kind::HostAllocated, context->device, context, true, p};
  *pointer = p;
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** pointer, size_t bytes) {
  return cudaHostAlloc(pointer, bytes, cudaHostAllocDefault);
}

cudaError_t cudaFreeHost(void* pointer) {
  KVIO_FAKE_INJECTABLE("cudaFreeHost");
  return release(pointer, Kind::HostAllocated, cudaErrorInvalidValue);
}

cudaError_t cudaHostRegister(void* pointer, size_t bytes, unsigned int flags) {
  KVIO_FAKE_INJECTABLE("cudaHostRegister");
  auto lock = locked();
  Context* context = runtimeContext();
  if (stickyOf(context) != cudaSuccess) return fail(stickyOf(context));
  const cudaError_t error = unsafeCall();
  if (error != cudaSuccess) return fail(error);
  const uint64_t address = reinterpret_cast<uint64_t>(pointer);
  if (pointer == nullptr || bytes == 0) return fail(cudaErrorInvalidValue);
  if (overlaps(address, bytes)) return fail(cudaErrorHostMemoryAlreadyRegistered);
  allocations()[address] =
      Allocation{address,         bytes,   Kind::HostRegistered,
                 context->device, context, (flags & cudaHostRegisterMapped) != 0,
                 nullptr};
  return cudaSuccess;
}

cudaError_t cudaHostUnregister(void* pointer) {
  KVIO_FAKE_INJECTABLE("cudaHostUnregister");
  if (pointer == nullptr) return fail(cudaErrorInvalidValue);
  return release(pointer, Kind::HostRegistered, cudaErrorHostMemoryNotRegistered);
}

cudaError_t cudaHostGetDevicePointer(void** device, void* host, unsigned int flags) {
  auto lock = locked();
  if (const cudaError_t sticky = enter()) return fail(sticky);
  const Allocation* a = find(reinterpret_cast<uint64_t>(host));
  if (flags != 0 || a == nullptr || a->kind == Kind::Device || !a->mapped) {
    return fail(cudaErrorInvalidValue);
  }
  *device = host;
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* pointer) {
  auto lock = locked();
  if (const cudaError_t sticky = enter()) return fail(sticky);
  *attributes = cudaPointerAttributes{};
  const Allocation* a = find(reinterpret_cast<uint64_t>(pointer));
  if (a == nullptr) {
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = cudaInvalidDeviceId;
    return cudaSuccess;
  }
  attributes->device = a->device;
  if (a->kind == Kind::Device) {
    attributes->type = cudaMemoryTypeDevice;
    attributes->devicePointer = const_cast<void*>(pointer);
  } else {
    attributes->type = cudaMemoryTypeHost;
    attributes->hostPointer = const_cast<void*>(pointer);
    if (a->mapped) attributes->devicePointer = const_cast<void*>(pointer);
  }
  return cudaSuccess;
}

// ---- copies ----

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  KVIO_FAKE_INJECTABLE("cudaMemcpyAsync");
  return memcpyKind(dst, src, count, kind, stream, false);
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return memcpyKind(dst, src, count, kind, nullptr, true);
}

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                              size_t width, size_t height, cudaMemcpyKind kind,
                              cudaStream_t stream) {
  KVIO_FAKE_INJECTABLE("cudaMemcpy2DAsync");
  auto lock = locked();
  Context* context = runtimeContext();
  if (stickyOf(context) != cudaSuccess) return fail(stickyOf(context));
  if (width == 0 || height == 0) return cudaSuccess;
  if (dpitch < width || spitch < width || dpitch > static_cast<size_t>(INT_MAX) ||
      spitch > static_cast<size_t>(INT_MAX)) {
    return fail(cudaErrorInvalidPitchValue);
  }
  bool pageable = false;
  const uint64_t d = reinterpret_cast<uint64_t>(dst), s = reinterpret_cast<uint64_t>(src);
  cudaError_t error =
      checkSide(d, dpitch * (height - 1) + width,
                kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice, &pageable);
  if (error == cudaSuccess) {
    error =
        checkSide(s, spitch * (height - 1) + width,
                  kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice, &pageable);
  }
  if (error != cudaSuccess) return fail(error);
  std::vector<Copy> rows;
  for (size_t r = 0; r < height; ++r) rows.push_back({d + r * dpitch, s + r * spitch, width});
  return fail(queueCopies(stream, std::move(rows), pageable, &lock));
}

// The header's rules: flags zero ("for future use"), not the default NULL stream, every op a
// valid srcAccessOrder; each extent nonzero and within its operands' rows and layers.
cudaError_t cudaMemcpy3DBatchAsync(size_t count, cudaMemcpy3DBatchOp* ops, unsigned long long flags,
                                   cudaStream_t stream) {
  auto lock = locked();
  Context* context = runtimeContext();
  if (stickyOf(context) != cudaSuccess) return fail(stickyOf(context));
  if (count == 0 || ops == nullptr || flags != 0 || stream == nullptr ||
      stream == cudaStreamLegacy) {
    return fail(cudaErrorInvalidValue);
  }
  std::vector<Copy> rows;
  bool pageable = false;
  for (size_t i = 0; i < count; ++i) {
    const cudaMemcpy3DBatchOp& op = ops[i];
    if (op.srcAccessOrder == cudaMemcpySrcAccessOrderInvalid ||
        op.srcAccessOrder > cudaMemcpySrcAccessOrderAny) {
      return fail(cudaErrorInvalidValue);
    }
    if (op.src.type != cudaMemcpyOperandTypePointer ||
        op.dst.type != cudaMemcpyOperandTypePointer) {
      return fail(cudaErrorNotSupported);
    }
    const cudaExtent e = op.extent;
    const auto& sp = op.src.op.ptr;
    const auto& dp = op.dst.op.ptr;
    if (e.width == 0 || e.height == 0 || e.depth == 0 || sp.rowLength < e.width ||
        dp.rowLength < e.width || sp.layerHeight < e.height || dp.layerHeight < e.height) {
      return fail(cudaErrorInvalidValue);
    }
    const uint64_t sSlice = sp.rowLength * sp.layerHeight, dSlice = dp.rowLength * dp.layerHeight;
    const uint64_t s = reinterpret_cast<uint64_t>(sp.ptr), d = reinterpret_cast<uint64_t>(dp.ptr);
    if (checkSide(s, sSlice * (e.depth - 1) + sp.rowLength * (e.height - 1) + e.width, false,
                  &pageable) != cudaSuccess ||
        checkSide(d, dSlice * (e.depth - 1) + dp.rowLength * (e.height - 1) + e.width, false,
                  &pageable) != cudaSuccess) {
      return fail(cudaErrorInvalidValue);
    }
    for (size_t z = 0; z < e.depth; ++z) {
      for (size_t y = 0; y < e.height; ++y) {
        rows.push_back(
            {d + z * dSlice + y * dp.rowLength, s + z * sSlice + y * sp.rowLength, e.width});
      }
    }
  }
  return fail(queueCopies(stream, std::move(rows), pageable, &lock));
}

cudaError_t cudaMemsetAsync(void* pointer, int value, size_t count, cudaStream_t stream) {
  KVIO_FAKE_INJECTABLE("cudaMemsetAsync");
  auto lock = locked();
  Context* context = runtimeContext();
  if (stickyOf(context) != cudaSuccess) return fail(stickyOf(context));
  if (count == 0) return cudaSuccess;
  bool pageable = false;
  if (checkSide(reinterpret_cast<uint64_t>(pointer), count, true, &pageable) != cudaSuccess) {
    return fail(cudaErrorInvalidValue);
  }
  std::shared_ptr<Stream> s = resolve(stream);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  return fail(enqueue(s, [pointer, value, count] {
    std::memset(pointer, value, count);
    return cudaSuccess;
  }));
}

cudaError_t cudaMemset(void* pointer, int value, size_t count) {
  cudaError_t error = cudaMemsetAsync(pointer, value, count, nullptr);
  if (error == cudaSuccess) error = cudaStreamSynchronize(nullptr);
  return error;
}

// ---- streams ----

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  KVIO_FAKE_INJECTABLE("cudaStreamCreateWithFlags");
  auto lock = locked();
  Context* context = runtimeContext();
  if (stickyOf(context) != cudaSuccess) return fail(stickyOf(context));
  std::shared_ptr<Stream> s = makeStream(context, (flags & cudaStreamNonBlocking) == 0, false);
  streams()[s.get()] = s;
  *stream = reinterpret_cast<cudaStream_t>(s.get());
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  KVIO_FAKE_INJECTABLE("cudaStreamDestroy");
  auto lock = locked();
  if (const cudaError_t sticky = enter()) return fail(sticky);
  auto it = streams().find(reinterpret_cast<Stream*>(stream));
  if (it == streams().end()) return fail(cudaErrorInvalidResourceHandle);
  std::shared_ptr<Stream> s = it->second;
  if (capturing(s.get())) return fail(cudaErrorIllegalState);
  streams().erase(it);
  lock.unlock();
  drain(s.get());  // its work completes (the real call returns at once and finishes it later)
  stop(s);
  return cudaSuccess;
}

namespace {
// What a synchronisation or query of a stream checks first (under the global lock): the sticky
// error, the handle, its own capture (refused and invalidated), the thread's capture mode, and
// for the legacy stream a blocking stream of its context capturing
// (cudaErrorStreamCaptureImplicit).
cudaError_t waitable(cudaStream_t stream, std::shared_ptr<Stream>* out) {
  if (const cudaError_t sticky = enter()) return sticky;
  std::shared_ptr<Stream> s = resolve(stream);
  if (!s) return cudaErrorInvalidResourceHandle;
  if (capturing(s.get())) {
    s->capture = cudaStreamCaptureStatusInvalidated;
    return cudaErrorStreamCaptureUnsupported;
  }
  const cudaError_t error = unsafeCall();
  if (error != cudaSuccess) return error;
  if (s->legacy && !capturingBeside(s.get()).empty()) {
    for (auto& c : capturingBeside(s.get())) c->capture = cudaStreamCaptureStatusInvalidated;
    return cudaErrorStreamCaptureImplicit;
  }
  *out = std::move(s);
  return cudaSuccess;
}
}  // namespace

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  KVIO_FAKE_INJECTABLE("cudaStreamSynchronize");
  auto lock = locked();
  std::shared_ptr<Stream> s;
  if (const cudaError_t error = waitable(stream, &s)) return fail(error);
  const uint64_t position = enqueuedOf(s.get());
  lock.unlock();
  waitFor(s.get(), position);
  return fail(stickyOf(s->context));
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  auto lock = locked();
  std::shared_ptr<Stream> s;
  if (const cudaError_t error = waitable(stream, &s)) return fail(error);
  std::lock_guard<std::mutex> held(s->mutex);
  return s->completed >= s->enqueued ? cudaSuccess : fail(cudaErrorNotReady);
}

cudaError_t cudaStreamGetDevice(cudaStream_t stream, int* device) {
  auto lock = locked();
  if (const cudaError_t sticky = enter()) return fail(sticky);
  std::shared_ptr<Stream> s = resolve(stream);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  *device = s->context->device;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  auto lock = locked();
  if (const cudaError_t sticky = enter()) return fail(sticky);
  std::shared_ptr<Stream> s = resolve(stream);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  if (s->legacy && !capturingBeside(s.get()).empty()) return fail(cudaErrorStreamCaptureImplicit);
  *status = s->capture;
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  auto lock = locked();
  std::shared_ptr<Stream> s = resolve(stream);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  if (s->legacy) return fail(cudaErrorStreamCaptureUnsupported);
  if (capturing(s.get())) return fail(cudaErrorIllegalState);
  s->capture = cudaStreamCaptureStatusActive;
  s->captureMode = mode;
  s->captureThread = std::this_thread::get_id();
  s->graph = new Graph;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  auto lock = locked();
  std::shared_ptr<Stream> s = resolve(stream);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  if (!capturing(s.get())) return fail(cudaErrorIllegalState);
  if (s->captureMode != cudaStreamCaptureModeRelaxed &&
      s->captureThread != std::this_thread::get_id()) {
    return fail(cudaErrorStreamCaptureWrongThread);
  }
  const bool valid = s->capture == cudaStreamCaptureStatusActive;
  s->capture = cudaStreamCaptureStatusNone;
  Graph* g = s->graph;
  s->graph = nullptr;
  if (!valid) {
    delete g;
    *graph = nullptr;
    return fail(cudaErrorStreamCaptureInvalidated);
  }
  *graph = reinterpret_cast<cudaGraph_t>(g);
  return cudaSuccess;
}

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  std::swap(*mode, threadCaptureMode);
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
  if (graph == nullptr || count == nullptr) return fail(cudaErrorInvalidValue);
  const size_t n = reinterpret_cast<Graph*>(graph)->nodes;
  if (nodes != nullptr) {
    for (size_t i = 0; i < std::min(n, *count); ++i) nodes[i] = nullptr;
  }
  *count = n;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete reinterpret_cast<Graph*>(graph);
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  auto lock = locked();
  Context* context = runtimeContext();
  const cudaError_t error = unsafeCall();
  if (error != cudaSuccess) return fail(error);
  synchronizeAll(&lock, context->device);
  return fail(stickyOf(context));
}

// ---- events ----

namespace {
// A query or synchronisation of an event recorded into a capture: refused, and the capture (if
// still going) invalidated.
cudaError_t invalidateCapture(Event* e) {  // under the global lock
  std::shared_ptr<Stream> s = e->capture.lock();
  if (s && s->capture == cudaStreamCaptureStatusActive) {
    s->capture = cudaStreamCaptureStatusInvalidated;
  }
  return cudaErrorStreamCaptureUnsupported;
}
}  // namespace

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int) {
  KVIO_FAKE_INJECTABLE("cudaEventCreateWithFlags");
  auto lock = locked();
  Context* context = runtimeContext();
  if (stickyOf(context) != cudaSuccess) return fail(stickyOf(context));
  auto* e = new Event;
  e->context = context;
  events().insert(e);
  *event = reinterpret_cast<cudaEvent_t>(e);
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  KVIO_FAKE_INJECTABLE("cudaEventRecord");
  auto lock = locked();
  if (const cudaError_t sticky = enter()) return fail(sticky);
  auto* e = reinterpret_cast<Event*>(event);
  if (events().count(e) == 0) return fail(cudaErrorInvalidResourceHandle);
  std::shared_ptr<Stream> s = resolve(stream);
  if (!s || s->context != e->context) return fail(cudaErrorInvalidResourceHandle);
  if (s->capture == cudaStreamCaptureStatusInvalidated) {
    return fail(cudaErrorStreamCaptureInvalidated);
  }
  if (capturing(s.get())) {  // a dependency inside the graph, no node; no longer queryable
    e->stream = nullptr;
    e->captured = true;
    e->capture = s;
    return cudaSuccess;
  }
  uint64_t position = 0;
  const cudaError_t error = enqueue(
      s, [] { return cudaSuccess; }, &position);
  if (error != cudaSuccess) return fail(error);
  e->stream = s;
  e->position = position;
  e->captured = false;
  return cudaSuccess;
}

namespace {
// What a query or synchronisation of an event checks first (under the global lock): the sticky
// error, the handle, a record into a capture (refused, the capture invalidated), the thread's
// capture mode.
cudaError_t waitableEvent(cudaEvent_t event, Event** out) {
  if (const cudaError_t sticky = enter()) return sticky;
  auto* e = reinterpret_cast<Event*>(event);
  if (events().count(e) == 0) return cudaErrorInvalidResourceHandle;
  if (e->captured) return invalidateCapture(e);
  if (const cudaError_t error = unsafeCall()) return error;
  *out = e;
  return cudaSuccess;
}
}  // namespace

cudaError_t cudaEventQuery(cudaEvent_t event) {
  auto lock = locked();
  Event* e = nullptr;
  if (const cudaError_t error = waitableEvent(event, &e)) return fail(error);
  if (!e->stream) return cudaSuccess;
  if (stickyOf(e->context) != cudaSuccess) return fail(stickyOf(e->context));
  std::lock_guard<std::mutex> held(e->stream->mutex);
  return e->stream->completed >= e->position ? cudaSuccess : fail(cudaErrorNotReady);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  auto lock = locked();
  Event* e = nullptr;
  if (const cudaError_t error = waitableEvent(event, &e)) return fail(error);
  std::shared_ptr<Stream> s = e->stream;
  const uint64_t position = e->position;
  lock.unlock();
  if (s) waitFor(s.get(), position);
  return fail(stickyOf(e->context));
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  auto lock = locked();
  if (const cudaError_t sticky = enter()) return fail(sticky);
  auto* e = reinterpret_cast<Event*>(event);
  if (events().erase(e) == 0) return fail(cudaErrorInvalidResourceHandle);
  delete e;
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
  auto lock = locked();
  if (const cudaError_t sticky = enter()) return fail(sticky);
  auto* e = reinterpret_cast<Event*>(event);
  if (events().count(e) == 0) return fail(cudaErrorInvalidResourceHandle);
  std::shared_ptr<Stream> s = resolve(stream);
  if (!s) return fail(cudaErrorInvalidResourceHandle);
  if (!e->stream) return cudaSuccess;
  std::shared_ptr<Stream> from = e->stream;
  const uint64_t position = e->position;
  return fail(enqueue(s, [from, position] {
    waitFor(from.get(), position);
    return cudaSuccess;
  }));
}
