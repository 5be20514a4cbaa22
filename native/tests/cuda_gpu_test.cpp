// GPU tests of the 'kernel', 'direct' and 'staged' io backends (ctest label `cuda`; built with the
// CUDA backend, skipped with the reason where no driver or device is present). The conformance
// matrix is one test case per configuration (backend x pool kind x host layout x device pool form x
// direction; device forms: kvio-allocated, one cudaMalloc per component, one per component and
// layer), so one failure cannot hide the others; inside each, granularities, layer-sharded host
// pools, page and row sizes, head splits and index patterns, checked against the oracle on whole
// buffers with canary-filled destinations. Every test-side write and read of device memory is
// ordered on the executor's stream (cudaMemcpyAsync from pinned staging memory, then
// cudaStreamSynchronize): kvio's own stream is non-blocking and does not wait for the legacy
// default stream (docs/cuda.md). Environment: KVIO_GPU_SWEEP=quick or minimal runs a smaller
// sweep per case (for compute-sanitizer and stress runs); KVIO_GPU_STRESS=N repeats each
// conformance case N times beside a busy kernel on another stream and reports each repetition;
// KVIO_GPU_TEST_ON_CPU=1 runs the conformance cases on the cpu backend with host memory, to check
// the test itself without a GPU. scripts/gpu-check.sh runs each case in its own process. Further:
// device-resident indices with bad entries (also through kvio.hpp's DeviceIndices, with its
// per-transfer launch shape), pageable host memory refused, caller host memory
// wrapped, closed, freed and wrapped again, caller streams, transfer events, CTA budgets 1 to 16.
// 'staged' runs the conformance cases with its default staging buffer (kvio-allocated device
// pools: one chunk) and with KVIO_STAGED_BYTES=12K (the caller-buffer forms: many chunks, rows
// cut across chunks); it refuses device to device and a bad KVIO_STAGED_BYTES.
#include <cuda.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "conformance_matrix.hpp"
#include "cuda_gpu_busy.hpp"
#include "kvio/kvio.h"
#include "kvio/kvio.hpp"
#include "oracle.hpp"
#include "rejection_assertions.hpp"

namespace kvio_test {
namespace {

/// Records a test failure naming the call and the CUDA error; true when `error` is cudaSuccess.
bool cudaOk(cudaError_t error, const char* call) {
  if (error == cudaSuccess) return true;
  ADD_FAILURE() << call << ": " << cudaGetErrorName(error) << " (" << cudaGetErrorString(error)
                << ")";
  return false;
}
#define CUDA_OK(call)                   \
  do {                                  \
    if (!cudaOk((call), #call)) return; \
  } while (0)
#define CUDA_CHECK(call) cudaOk((call), #call)

std::string unavailableReason() {
  if (kvio_backend_available(KVIO_BACKEND_KERNEL) == KVIO_STATUS_OK) return {};
  return std::string("no CUDA device: ") + kvio_last_error();
}

#define REQUIRE_GPU()                                                          \
  do {                                                                         \
    if (hostEmulation()) GTEST_SKIP() << "needs a GPU (KVIO_GPU_TEST_ON_CPU)"; \
    const std::string reason = unavailableReason();                            \
    if (!reason.empty()) GTEST_SKIP() << reason;                               \
  } while (0)

int envInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atoi(value) : fallback;
}
/// KVIO_GPU_TEST_ON_CPU=1: the conformance cases run on the cpu backend with host memory in
/// place of device and pinned memory (same pools, forms, indices and oracle checks), which
/// checks the test itself on a machine without a GPU (ctest cuda_gpu_test_harness_on_cpu).
bool hostEmulation() {
  return envInt("KVIO_GPU_TEST_ON_CPU", 0) != 0;
}
/// KVIO_GPU_SWEEP: full (default), quick or minimal: how much of the sweep each case runs.
enum class Sweep { Full, Quick, Minimal };
Sweep sweepLevel() {
  const char* value = std::getenv("KVIO_GPU_SWEEP");
  const std::string level = value != nullptr ? value : "";
  if (level == "quick") return Sweep::Quick;
  if (level == "minimal") return Sweep::Minimal;
  return Sweep::Full;
}
int stressRepetitions() {
  return envInt("KVIO_GPU_STRESS", 0);
}

kvio_pool_spec specOf(const Geometry& g) {
  return g.spec().toC();
}

/// Sets (value nullptr: unsets) an environment variable while it lives, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

/// A kernel, direct or staged executor (device 0) and the stream it orders its work on.
class Executor {
 public:
  explicit Executor(int32_t backend, uint64_t stream = KVIO_CUDA_OWN_STREAM, int32_t ctaBudget = 0,
                    int32_t warps = 0, int32_t device = 0)
      : ownStream_(stream == KVIO_CUDA_OWN_STREAM) {
    if (hostEmulation()) {
      EXPECT_EQ(kvio_executor_create(KVIO_BACKEND_CPU, 2, &handle_), KVIO_STATUS_OK)
          << kvio_last_error();
      return;
    }
    EXPECT_EQ(kvio_executor_create_cuda(backend, device, stream, ctaBudget, warps, &handle_),
              KVIO_STATUS_OK)
        << kvio_last_error();
    uint64_t reported = 0;
    if (handle_ != 0) {
      EXPECT_EQ(kvio_executor_cuda_stream(handle_, &reported), KVIO_STATUS_OK) << kvio_last_error();
    }
    stream_ = reinterpret_cast<cudaStream_t>(reported);
  }
  ~Executor() {
    if (handle_ != 0) {
      EXPECT_EQ(kvio_executor_close(handle_), KVIO_STATUS_OK) << kvio_last_error();
    }
  }
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;
  bool ok() const { return handle_ != 0 && (stream_ != nullptr || !ownStream_ || hostEmulation()); }
  uint64_t handle() const { return handle_; }
  cudaStream_t stream() const { return stream_; }

 private:
  bool ownStream_;  // its stream is kvio's (not 0, the legacy default stream, which a caller may
                    // pass)
  uint64_t handle_ = 0;
  cudaStream_t stream_ = nullptr;
};

/// `count` elements of T in device memory (cudaMalloc), freed (and the free checked) however the
/// test ends: a failed ASSERT between the cudaMalloc and a cudaFree at the end leaked it.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t count) {
    void* p = nullptr;
    if (CUDA_CHECK(cudaMalloc(&p, count * sizeof(T)))) data_ = static_cast<T*>(p);
  }
  ~DeviceArray() {
    if (data_ != nullptr) CUDA_CHECK(cudaFree(data_));
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  bool ok() const { return data_ != nullptr; }
  T* get() const { return data_; }

 private:
  T* data_ = nullptr;
};

/// A non-blocking stream of the current device, destroyed (and the destruction checked) however
/// the test ends.
class OwnedStream {
 public:
  OwnedStream() { CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~OwnedStream() {
    if (stream_ != nullptr) CUDA_CHECK(cudaStreamDestroy(stream_));
  }
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;

  bool ok() const { return stream_ != nullptr; }
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

/// A capture of a stream in global mode (cudaStreamBeginCapture's and torch.cuda.graph's default)
/// holding one node of its own, a memset: CUDA then forbids "potentially unsafe" calls on every
/// thread unless its capture mode is relaxed, and such a call fails and invalidates the capture.
/// end() says whether the capture ended valid with that node alone; one a failed test left open
/// is ended when this goes (before its stream).
class GlobalCapture {
 public:
  GlobalCapture() : scratch_(256) {}
  ~GlobalCapture() {
    if (capturing_) static_cast<void>(end());
  }
  GlobalCapture(const GlobalCapture&) = delete;
  GlobalCapture& operator=(const GlobalCapture&) = delete;

  bool ok() const { return stream_.ok() && scratch_.ok(); }
  bool begin() {
    capturing_ = CUDA_CHECK(cudaStreamBeginCapture(stream_.get(), cudaStreamCaptureModeGlobal));
    return capturing_ &&
           CUDA_CHECK(cudaMemsetAsync(scratch_.get(), 0, 256 * sizeof(float), stream_.get()));
  }
  ::testing::AssertionResult end() {
    capturing_ = false;
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream_.get(), &graph);
    if (ended != cudaSuccess) {
      return ::testing::AssertionFailure()
             << "the capture was invalidated: cudaStreamEndCapture answered "
             << cudaGetErrorName(ended);
    }
    size_t nodes = 0;
    const bool counted = CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
    CUDA_CHECK(cudaGraphDestroy(graph));
    if (counted && nodes != 1) {
      return ::testing::AssertionFailure()
             << "the capture holds " << nodes << " nodes, not its memset alone";
    }
    return counted ? ::testing::AssertionSuccess() : ::testing::AssertionFailure();
  }

 private:
  OwnedStream stream_;
  DeviceArray<float> scratch_;
  bool capturing_ = false;
};

enum class Memory { Device, PinnedHost, WrappedHost };

/// A pool in device memory (kvio-allocated, or caller cudaMalloc buffers per component / per
/// layer), pinned host memory kvio allocated, or caller host memory kvio registers (deliberately
/// not 16-byte aligned). Device memory is written and read on `stream` (the executor's), through
/// pinned staging memory, and waited for; host memory directly (no transfer is in flight then).
/// Memory of CUDA device `device`: caller buffers are allocated with it current, then the
/// thread's device is put back.
class GpuPool {
 public:
  GpuPool(const Geometry& g, Memory memory, cudaStream_t stream, int32_t device = 0)
      : g_(g), onDevice_(memory == Memory::Device && !hostEmulation()), stream_(stream) {
    const kvio_pool_spec spec = specOf(g);
    const size_t bytes = regionBytes();
    const int32_t pinnedKind = hostEmulation() ? KVIO_MEMORY_HOST : KVIO_MEMORY_HOST_PINNED;
    const int32_t deviceKind = hostEmulation() ? KVIO_MEMORY_HOST : KVIO_MEMORY_CUDA_DEVICE;
    if (memory == Memory::WrappedHost) {
      hostStorage_.assign(bytes + 64, 0);
      regions_.push_back(hostStorage_.data() + 8);
      EXPECT_EQ(kvio_pool_wrap_memory(&spec, pinnedKind, device,
                                      reinterpret_cast<uint64_t>(regions_[0]), bytes, &handle_),
                KVIO_STATUS_OK)
          << kvio_last_error();
      return;
    }
    if (memory == Memory::PinnedHost || g.form == Form::Single || g.form == Form::Allocated) {
      const int32_t kind = memory == Memory::PinnedHost ? pinnedKind : deviceKind;
      EXPECT_EQ(kvio_pool_allocate_memory(&spec, kind, device, &handle_), KVIO_STATUS_OK)
          << kvio_last_error();
      uint64_t address = 0;
      if (handle_ != 0) {
        EXPECT_EQ(kvio_pool_region(handle_, 0, &address, nullptr, nullptr), KVIO_STATUS_OK);
      }
      regions_.push_back(reinterpret_cast<uint8_t*>(address));
    } else {
      // One cudaMalloc per component or per (component, layer), as a serving engine has them.
      std::vector<uint64_t> addresses;
      for (int64_t r = 0; r < g.regions(); ++r) {
        void* p = nullptr;
        if (hostEmulation()) {
          callerHost_.emplace_back(bytes);
          p = callerHost_.back().data();
        } else {
          int current = 0;
          if (!CUDA_CHECK(cudaGetDevice(&current)) || !CUDA_CHECK(cudaSetDevice(device))) return;
          const bool allocated = CUDA_CHECK(cudaMalloc(&p, bytes));
          if (!CUDA_CHECK(cudaSetDevice(current)) || !allocated) return;
          owned_.push_back(p);
        }
        regions_.push_back(static_cast<uint8_t*>(p));
        addresses.push_back(reinterpret_cast<uint64_t>(p));
      }
      if (g.form == Form::PerComponent) {
        EXPECT_EQ(kvio_pool_wrap_components_memory(&spec, deviceKind, device, addresses.data(),
                                                   static_cast<int32_t>(g.C()), bytes, &handle_),
                  KVIO_STATUS_OK)
            << kvio_last_error();
      } else {
        EXPECT_EQ(kvio_pool_wrap_layer_table_memory(&spec, deviceKind, device, addresses.data(),
                                                    static_cast<int64_t>(addresses.size()), bytes,
                                                    &handle_),
                  KVIO_STATUS_OK)
            << kvio_last_error();
      }
    }
    if (onDevice_) {
      void* staging = nullptr;
      if (CUDA_CHECK(cudaMallocHost(&staging, bytes * regions_.size()))) {
        staging_ = static_cast<uint8_t*>(staging);
      }
    }
  }
  ~GpuPool() {
    if (handle_ != 0) {
      EXPECT_EQ(kvio_pool_close(handle_), KVIO_STATUS_OK) << kvio_last_error();
    }
    for (void* p : owned_) CUDA_CHECK(cudaFree(p));
    if (staging_ != nullptr) CUDA_CHECK(cudaFreeHost(staging_));
  }
  GpuPool(const GpuPool&) = delete;
  GpuPool& operator=(const GpuPool&) = delete;

  bool ok() const { return handle_ != 0 && (!onDevice_ || staging_ != nullptr); }
  uint64_t handle() const { return handle_; }
  size_t regionBytes() const { return static_cast<size_t>(g_.regionBytes()); }

  /// Whether the pool holds `expected`, buffer for buffer (`what` names it in the failure); a
  /// failed read is a failure too.
  ::testing::AssertionResult holds(const Image& expected, const char* what) const {
    Image actual;
    if (!read(&actual)) return ::testing::AssertionFailure() << "reading " << what << " failed";
    return sameImage(expected, actual, what);
  }

  /// Whole buffers; false (with a recorded failure) when a CUDA call failed.
  bool read(Image* image) const {
    const size_t bytes = regionBytes();
    image->buffers.resize(regions_.size());  // an image read into before keeps its memory
    for (std::vector<uint8_t>& buffer : image->buffers) buffer.resize(bytes);
    if (!onDevice_) {
      for (size_t r = 0; r < regions_.size(); ++r) {
        std::memcpy(image->buffers[r].data(), regions_[r], bytes);
      }
      return true;
    }
    for (size_t r = 0; r < regions_.size(); ++r) {
      if (!CUDA_CHECK(cudaMemcpyAsync(staging_ + r * bytes, regions_[r], bytes,
                                      cudaMemcpyDeviceToHost, stream_))) {
        return false;
      }
    }
    if (!CUDA_CHECK(cudaStreamSynchronize(stream_))) return false;
    for (size_t r = 0; r < regions_.size(); ++r) {
      std::memcpy(image->buffers[r].data(), staging_ + r * bytes, bytes);
    }
    return true;
  }
  bool write(const Image& image) {
    const size_t bytes = regionBytes();
    for (size_t r = 0; r < regions_.size(); ++r) {
      if (!onDevice_) {
        std::memcpy(regions_[r], image.buffers[r].data(), bytes);
        continue;
      }
      std::memcpy(staging_ + r * bytes, image.buffers[r].data(), bytes);
      if (!CUDA_CHECK(cudaMemcpyAsync(regions_[r], staging_ + r * bytes, bytes,
                                      cudaMemcpyHostToDevice, stream_))) {
        return false;
      }
    }
    return !onDevice_ || CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  Image filled(uint8_t value) const {
    Image image;
    fill(&image, value);
    return image;
  }
  /// filled() into `image`, reusing its memory.
  void fill(Image* image, uint8_t value) const {
    image->buffers.resize(regions_.size());
    for (std::vector<uint8_t>& buffer : image->buffers) buffer.assign(regionBytes(), value);
  }
  Image random(std::mt19937_64& rng) const {
    Image image;
    for (size_t r = 0; r < regions_.size(); ++r) {
      image.buffers.emplace_back(regionBytes());
      fillRandom(image.buffers.back().data(), image.buffers.back().size(), rng);
    }
    return image;
  }

 private:
  Geometry g_;
  bool onDevice_;  // device memory, read and written on stream_
  cudaStream_t stream_;
  uint64_t handle_ = 0;
  std::vector<uint8_t*> regions_;
  std::vector<void*> owned_;
  std::vector<uint8_t> hostStorage_;
  std::vector<std::vector<uint8_t>> callerHost_;  // caller "device" buffers under emulation
  uint8_t* staging_ = nullptr;
};

Geometry make(int32_t kind, int32_t layout, Form form, int64_t L, int64_t P, int64_t ps, int64_t H,
              int64_t hb) {
  return Geometry{kind, layout, form, L, P, ps, H, hb};
}

/// An executor of `backend` (kvio's own stream) with a device pool of `dg` and a pinned host
/// pool of `hg` on its stream: what the single-configuration tests move between.
struct DeviceAndHost {
  DeviceAndHost(int32_t backend, const Geometry& deviceGeometry, const Geometry& hostGeometry)
      : executor(backend),
        dg(deviceGeometry),
        hg(hostGeometry),
        device(dg, Memory::Device, executor.stream()),
        host(hg, Memory::PinnedHost, executor.stream()) {}
  bool ok() const { return executor.ok() && device.ok() && host.ok(); }
  Executor executor;
  const Geometry dg, hg;
  GpuPool device, host;
};

/// Submits, waits for and closes transfers; false (with a recorded failure) on any error.
struct Submitted {
  uint64_t bytes = 0;
  int32_t chosenBackend = -1;  // of the last transfer (kvio_transfer_info.chosen_backend)
  int64_t launches = 0;        // of the last transfer (kvio_transfer_info.launches)
  int64_t copies = 0;          // of the last transfer (kvio_transfer_info.copies)
};
bool runTransfer(uint64_t executor, uint64_t src, uint64_t dst, const std::vector<int64_t>& srcIdx,
                 const std::vector<int64_t>& dstIdx, int64_t srcLayer, int64_t dstLayer,
                 int64_t layers, Submitted* submitted) {
  uint64_t transfer = 0;
  const kvio_status status =
      kvio_submit_args(executor, src, dst, srcIdx.data(), dstIdx.data(),
                       static_cast<int64_t>(srcIdx.size()), srcLayer, dstLayer, layers, &transfer);
  EXPECT_EQ(status, KVIO_STATUS_OK) << "submit: " << kvio_last_error();
  if (status != KVIO_STATUS_OK) return false;
  const kvio_status waited = kvio_transfer_wait(transfer, -1);
  EXPECT_EQ(waited, KVIO_STATUS_OK) << "wait: " << kvio_last_error();
  EXPECT_EQ(kvio_transfer_is_done(transfer), 1);
  uint64_t bytes = 0;
  EXPECT_EQ(kvio_transfer_bytes(transfer, &bytes), KVIO_STATUS_OK);
  submitted->bytes += bytes;
  kvio_transfer_info info{};
  EXPECT_EQ(kvio_transfer_get_info(transfer, &info), KVIO_STATUS_OK);
  submitted->chosenBackend = info.chosen_backend;
  submitted->launches = info.launches;
  submitted->copies = info.copies;
  EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
  return waited == KVIO_STATUS_OK;
}

// One transfer src -> dst with random indices, checked against the oracle (whole destination).
bool checkTransfer(uint64_t executor, const Geometry& sg, GpuPool& src, const Geometry& dg,
                   GpuPool& dst, std::mt19937_64& rng, int64_t layers, int64_t srcLayer,
                   int64_t dstLayer, int64_t pairs = 0 /* 0: a random number */,
                   Submitted* report = nullptr) {
  const Image srcImage = src.random(rng);
  Image expected = dst.random(rng);
  if (!src.write(srcImage) || !dst.write(expected)) return false;
  const int64_t n =
      pairs > 0 ? pairs
                : 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(std::min(sg.S(), dg.S())));
  std::vector<int64_t> srcIdx = distinct(rng, sg.S(), n);
  std::vector<int64_t> dstIdx = distinct(rng, dg.S(), n);
  if (rng() % 2 == 0) {  // page-aligned runs, the common case
    std::sort(srcIdx.begin(), srcIdx.end());
    std::sort(dstIdx.begin(), dstIdx.end());
  }
  Submitted submitted;
  if (!runTransfer(executor, src.handle(), dst.handle(), srcIdx, dstIdx, srcLayer, dstLayer, layers,
                   &submitted)) {
    return false;
  }
  if (report != nullptr) *report = submitted;
  applyTransfer(sg, srcImage, dg, &expected, srcIdx, dstIdx, srcLayer, dstLayer, layers);
  const ::testing::AssertionResult same = dst.holds(expected, "destination");
  EXPECT_TRUE(same);
  return static_cast<bool>(same);
}

/// Sets each launch shape (every budget with every warps count) on `executor` and runs `check`
/// under it, a trace naming the shape; then a shape past the limits (33 warps) is refused.
template <class Check>
void eachLaunchShape(uint64_t executor, std::initializer_list<int32_t> budgets,
                     std::initializer_list<int32_t> warpCounts, Check&& check) {
  for (const int32_t budget : budgets) {
    for (const int32_t warps : warpCounts) {
      ASSERT_EQ(kvio_executor_set_launch(executor, budget, warps), KVIO_STATUS_OK)
          << kvio_last_error();
      SCOPED_TRACE("budget " + std::to_string(budget) + " warps " + std::to_string(warps));
      check();
    }
  }
  EXPECT_EQ(kvio_executor_set_launch(executor, 1, 33), KVIO_STATUS_INVALID_ARGUMENT);
}

// ---- the conformance matrix, one test case per configuration ----

struct GpuCase {
  int32_t backend;
  Case c;
};

std::string gpuCaseName(const GpuCase& gc) {
  return std::string(kvio_name(KVIO_NAME_BACKEND, gc.backend)) + "_" + describe(gc.c);
}
void PrintTo(const GpuCase& gc, std::ostream* os) {
  *os << gpuCaseName(gc);
}

std::vector<GpuCase> gpuCases() {
  std::vector<GpuCase> cases;
  // auto on kvio-allocated device pools only: it runs kernel or direct, which the other forms
  // check; this checks its dispatch on every layout and direction.
  for (int32_t backend :
       {KVIO_BACKEND_KERNEL, KVIO_BACKEND_DIRECT, KVIO_BACKEND_AUTO, KVIO_BACKEND_STAGED})
    for (int32_t kind : {KVIO_KIND_MHA, KVIO_KIND_MLA})
      for (int32_t layout = 0; layout < KVIO_LAYOUT_COUNT; ++layout) {
        if (kind == KVIO_KIND_MLA && layout == KVIO_LAYOUT_PAGE_HEAD) continue;
        for (Form form : {Form::Allocated, Form::PerComponent, Form::PerLayer}) {
          if (backend == KVIO_BACKEND_AUTO && form != Form::Allocated) continue;
          for (bool backup : {true, false})
            cases.push_back(GpuCase{backend, Case{kind, layout, form, backup}});
        }
      }
  return cases;
}

/// One configuration on fresh pools: every index pattern, per-layer and all-layer transfers.
/// Returns the number of failed checks (each also recorded as a test failure).
int runGpuConfig(const Executor& executor, const Case& c, bool sharded, int64_t ps, Heads heads,
                 std::mt19937_64& rng) {
  // Device pages and host pages differ so that an index applied to the wrong side shows.
  const int64_t devicePages = std::max<int64_t>(4, 40 / ps);
  const Geometry dg = make(c.kind, KVIO_LAYOUT_LAYER_FIRST, c.deviceForm, kDeviceLayers,
                           devicePages, ps, heads.H, heads.hb);
  const int64_t shardStart = sharded ? 1 : 0;
  const int64_t hostLayers = sharded ? 2 : kDeviceLayers;  // host holds device [a, a+Lh)
  const Geometry hg = make(c.kind, c.hostLayout, Form::Allocated, hostLayers, devicePages + 1, ps,
                           heads.H, heads.hb);
  GpuPool device(dg, Memory::Device, executor.stream());
  // page_first host pools are caller memory kvio registers; the others kvio allocates pinned.
  GpuPool host(hg,
               c.hostLayout == KVIO_LAYOUT_PAGE_FIRST ? Memory::WrappedHost : Memory::PinnedHost,
               executor.stream());
  if (!device.ok() || !host.ok()) return 1;
  GpuPool& src = c.backup ? device : host;
  GpuPool& dst = c.backup ? host : device;
  const Geometry& sg = c.backup ? dg : hg;
  const Geometry& dstG = c.backup ? hg : dg;
  const Image srcImage = src.random(rng);
  if (!src.write(srcImage)) return 1;

  int failures = 0;
  Image expected, actual, source;  // each step's, their memory reused (fresh ones page-fault)
  for (Pattern pattern : {Pattern::WholePages, Pattern::TokenSlots, Pattern::CrossingRuns}) {
    for (bool perLayer : {true, false}) {
      SCOPED_TRACE(std::string(patternName(pattern)) + (perLayer ? " per_layer" : " all_layer"));
      std::vector<int64_t> devIdx, hostIdx, devPages, hostPages;
      makeIndexSets(pattern, dg, hg, c.backup, rng, &devIdx, &hostIdx, &devPages, &hostPages);
      const std::vector<int64_t>& srcIdx = c.backup ? devIdx : hostIdx;
      const std::vector<int64_t>& dstIdx = c.backup ? hostIdx : devIdx;
      dst.fill(&expected, kCanary);
      if (!dst.write(expected)) return failures + 1;
      // (host layer j) <-> (device layer shardStart + j)
      auto srcLayer = [&](int64_t j) { return c.backup ? shardStart + j : j; };
      auto dstLayer = [&](int64_t j) { return c.backup ? j : shardStart + j; };
      Submitted submitted;
      uint64_t expectedBytes = 0;
      const uint64_t rowBytes = static_cast<uint64_t>(dg.C() * dg.row());
      std::vector<int64_t> layerIds{0};
      if (perLayer) {
        layerIds = {hostLayers - 1, 0};
        if (hostLayers > 2) layerIds.push_back(2);
      }
      for (int64_t j : layerIds) {
        const int64_t layers = perLayer ? 1 : hostLayers;
        if (!runTransfer(executor.handle(), src.handle(), dst.handle(), srcIdx, dstIdx, srcLayer(j),
                         dstLayer(j), layers, &submitted)) {
          return failures + 1;
        }
        applyTransfer(sg, srcImage, dstG, &expected, srcIdx, dstIdx, srcLayer(j), dstLayer(j),
                      layers);
        expectedBytes += rowBytes * srcIdx.size() * static_cast<uint64_t>(layers);
      }
      EXPECT_EQ(submitted.bytes, expectedBytes);
      if (!dst.read(&actual) || !src.read(&source)) return failures + 1;
      const ::testing::AssertionResult sameDst = sameImage(expected, actual, "destination");
      const ::testing::AssertionResult sameSrc = sameImage(srcImage, source, "source");
      EXPECT_TRUE(sameDst);
      EXPECT_TRUE(sameSrc);
      if (!sameDst || !sameSrc || submitted.bytes != expectedBytes) ++failures;
    }
  }
  return failures;
}

/// The whole sweep of one case; returns the number of failed configurations.
int runGpuCase(const Executor& executor, const Case& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const Sweep sweep = sweepLevel();
  std::vector<int64_t> pageSizes{1, 16, 64}, rows{8, 64, 576, 656, 4096};
  std::vector<bool> shardings{false, true};
  if (sweep == Sweep::Quick) {
    pageSizes = {16};
    rows = {8, 656, 4096};
  } else if (sweep == Sweep::Minimal) {
    pageSizes = {16};
    rows = {656};
    shardings = {false};
  }
  int failed = 0;
  for (bool sharded : shardings)
    for (int64_t ps : pageSizes)
      for (int64_t row : rows)
        for (Heads heads : headSplits(c.kind, row)) {
          SCOPED_TRACE("ps=" + std::to_string(ps) + " row=" + std::to_string(row) +
                       " H=" + std::to_string(heads.H) + " hb=" + std::to_string(heads.hb) +
                       (sharded ? " sharded host [1,3)" : " full host"));
          if (runGpuConfig(executor, c, sharded, ps, heads, rng) == 0) continue;
          ++failed;
          // A sticky error (an illegal address) leaves the context dead: stop here.
          const cudaError_t sticky = cudaDeviceSynchronize();
          if (sticky != cudaSuccess) {
            ADD_FAILURE() << "CUDA context lost: " << cudaGetErrorName(sticky) << " ("
                          << cudaGetErrorString(sticky) << ")";
            return failed + 1000;
          }
        }
  return failed;
}

/// Keeps the GPU busy while it lives: a host thread launches a compute loop on every SM, again
/// and again, on a blocking stream of its own (so work wrongly put on the legacy default stream
/// would queue behind it, and kvio's non-blocking stream runs beside it).
class BusyGpu {
 public:
  BusyGpu() {
    int sms = 0;
    if (!CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0))) return;
    blocks_ = 2 * sms;
    if (!CUDA_CHECK(cudaStreamCreate(&stream_))) return;
    void* data = nullptr;
    if (!CUDA_CHECK(cudaMalloc(&data, sizeof(float) * blocks_ * kThreads))) return;
    data_ = static_cast<float*>(data);
    if (!CUDA_CHECK(cudaMemsetAsync(data_, 0, sizeof(float) * blocks_ * kThreads, stream_))) return;
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        cudaError_t error = cudaSuccess;
        for (int i = 0; i < 4 && error == cudaSuccess; ++i) {
          error = kvioTestLaunchBusy(stream_, data_, blocks_, kThreads, 200000);
          if (error == cudaSuccess) launches_.fetch_add(1);
        }
        if (error == cudaSuccess) error = cudaStreamSynchronize(stream_);
        if (error != cudaSuccess) {
          error_.store(error);
          return;
        }
      }
    });
    started_ = true;
  }
  ~BusyGpu() { stop(); }
  BusyGpu(const BusyGpu&) = delete;
  BusyGpu& operator=(const BusyGpu&) = delete;
  bool ok() const { return started_; }
  /// Stops launching, waits, releases the stream and the buffer; returns the launches made.
  long stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
    const cudaError_t error = error_.load();
    if (error != cudaSuccess) {
      ADD_FAILURE() << "busy kernel: " << cudaGetErrorName(error) << " ("
                    << cudaGetErrorString(error) << ")";
    }
    if (stream_ != nullptr) {
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      CUDA_CHECK(cudaStreamDestroy(stream_));
      stream_ = nullptr;
    }
    if (data_ != nullptr) {
      CUDA_CHECK(cudaFree(data_));
      data_ = nullptr;
    }
    return launches_.load();
  }

 private:
  static constexpr int kThreads = 256;
  int blocks_ = 0;
  cudaStream_t stream_ = nullptr;
  float* data_ = nullptr;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<long> launches_{0};
  std::atomic<cudaError_t> error_{cudaSuccess};
  bool started_ = false;
};

class CudaConformance : public ::testing::TestWithParam<GpuCase> {};

TEST_P(CudaConformance, MatchesOracle) {
  if (!hostEmulation()) REQUIRE_GPU();
  const GpuCase& gc = GetParam();
  const uint64_t seed =
      0x6b76696f +
      static_cast<uint64_t>(gc.backend * 10000 + gc.c.kind * 1000 + gc.c.hostLayout * 100 +
                            static_cast<int>(gc.c.deviceForm) * 10 + gc.c.backup);
  // staged: a small staging buffer for the caller-buffer forms (chunks; the executor reads
  // KVIO_STAGED_BYTES when it is created), its default for kvio-allocated pools.
  const bool smallStaging = gc.backend == KVIO_BACKEND_STAGED && gc.c.deviceForm != Form::Allocated;
  ScopedEnv staging("KVIO_STAGED_BYTES", smallStaging ? "12K" : nullptr);
  Executor executor(gc.backend);
  ASSERT_TRUE(executor.ok()) << kvio_last_error();
  const int repetitions = stressRepetitions();
  if (repetitions <= 0) {
    EXPECT_EQ(runGpuCase(executor, gc.c, seed), 0) << "configurations failed";
    return;
  }
  if (hostEmulation()) GTEST_SKIP() << "the stress mode needs a GPU";
  BusyGpu busy;
  ASSERT_TRUE(busy.ok());
  const std::string name = gpuCaseName(gc);
  int failedRepetitions = 0;
  for (int r = 0; r < repetitions; ++r) {
    SCOPED_TRACE("stress repetition " + std::to_string(r + 1));
    const int failed = runGpuCase(executor, gc.c, seed + static_cast<uint64_t>(r));
    std::printf("[ STRESS   ] %s repetition %d/%d: %s", name.c_str(), r + 1, repetitions,
                failed == 0 ? "ok\n" : "FAIL");
    if (failed != 0) {
      std::printf(" (%d failed configurations%s)\n", failed % 1000,
                  failed >= 1000 ? ", CUDA context lost" : "");
      ++failedRepetitions;
    }
    std::fflush(stdout);
    if (failed >= 1000) break;
  }
  const long launches = busy.stop();
  std::printf("[ STRESS   ] %s: %d of %d repetitions failed, %ld busy kernels ran beside\n",
              name.c_str(), failedRepetitions, repetitions, launches);
  EXPECT_EQ(failedRepetitions, 0) << failedRepetitions << " of " << repetitions
                                  << " repetitions failed";
  EXPECT_GT(launches, 0) << "the busy kernel never ran";
}

INSTANTIATE_TEST_SUITE_P(Configs, CudaConformance, ::testing::ValuesIn(gpuCases()),
                         [](const ::testing::TestParamInfo<GpuCase>& info) {
                           return gpuCaseName(info.param);
                         });

// ---- launch shapes, device indices, memory kinds, streams, lifetimes ----

// 'auto' on the GPU: scattered 256-byte rows go to the kernel (also when marked as overlapping
// compute: below 8 KiB), whole 256 KiB layers to direct; every destination byte checked.
TEST(CudaAuto, ChoosesByRowSizeAndMovesEveryByte) {
  REQUIRE_GPU();
  Executor executor(KVIO_BACKEND_AUTO);
  ASSERT_TRUE(executor.ok());
  const Geometry g = make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 2, 64, 16, 1,
                          256);  // 256 B rows; a layer of a component: 256 KiB
  GpuPool device(g, Memory::Device, executor.stream());
  GpuPool host(g, Memory::PinnedHost, executor.stream());
  ASSERT_TRUE(device.ok() && host.ok());
  std::vector<int64_t> scattered, all;
  for (int64_t i = 0; i < g.S(); ++i) {
    all.push_back(i);
    if (i % 2 == 0) scattered.push_back(i);
  }
  std::mt19937_64 rng(21);
  for (const auto* indices : {&scattered, &all}) {
    for (bool backup : {false, true}) {
      GpuPool& src = backup ? device : host;
      GpuPool& dst = backup ? host : device;
      const Image srcImage = src.random(rng);
      Image expected = dst.random(rng);
      ASSERT_TRUE(src.write(srcImage) && dst.write(expected));
      Submitted submitted;
      ASSERT_TRUE(runTransfer(executor.handle(), src.handle(), dst.handle(), *indices, *indices, 0,
                              0, 2, &submitted));
      EXPECT_EQ(submitted.chosenBackend,
                indices == &all ? KVIO_BACKEND_DIRECT : KVIO_BACKEND_KERNEL)
          << (backup ? "backup" : "load") << " of " << indices->size() << " slots";
      applyTransfer(g, srcImage, g, &expected, *indices, *indices, 0, 0, 2);
      EXPECT_TRUE(dst.holds(expected, "destination"));
    }
  }
}

// KVIO_AUTO_CALIBRATION=measure: the executor times kernel against direct on the device when it
// is created (auto_measure.cpp) and says so in its calibration, with a crossover that is one of
// the row sizes it measured (4 KiB to 256 KiB) or never; then it moves bytes as the oracle says.
// auto on a GPU has no io threads, but a thread count no cpu executor takes is refused as it is
// on a machine without a GPU (it was accepted here and refused there).
TEST(CudaAuto, RefusesAThreadCountTheCpuRefusesToo) {
  REQUIRE_GPU();
  uint64_t executor = 0;
  EXPECT_EQ(kvio_executor_create(KVIO_BACKEND_AUTO, 1025, &executor), KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kvio_last_error()).find("threads must be 1 to 1024"), std::string::npos)
      << kvio_last_error();
  EXPECT_EQ(executor, 0u);
  ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_AUTO, 1024, &executor), KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
}

TEST(CudaAuto, MeasuresItsCrossoverWhenCreated) {
  REQUIRE_GPU();
  ScopedEnv measure("KVIO_AUTO_CALIBRATION", "measure");
  Executor executor(KVIO_BACKEND_AUTO);
  ASSERT_TRUE(executor.ok());
  const char* text = kvio_executor_auto_calibration(executor.handle());
  ASSERT_NE(text, nullptr) << kvio_last_error();
  const std::string calibration = text;
  std::printf("%s", calibration.c_str());  // the measured figures, for the GPU check's log
  EXPECT_NE(calibration.find("measured at first use on device 0"), std::string::npos)
      << calibration;
  const std::string key = "\ndirect_row_bytes = ";
  const size_t at = calibration.find(key);
  ASSERT_NE(at, std::string::npos) << calibration;
  const std::string value =
      calibration.substr(at + key.size(), calibration.find('\n', at + 1) - at - key.size());
  bool measured = value == "never";
  for (uint64_t row = 4096; row <= 262144; row *= 2) measured |= value == std::to_string(row);
  EXPECT_TRUE(measured) << "direct_row_bytes = " << value;
  const Geometry g =
      make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 2, 64, 16, 2, 128);
  GpuPool device(g, Memory::Device, executor.stream());
  GpuPool host(g, Memory::PinnedHost, executor.stream());
  ASSERT_TRUE(device.ok() && host.ok());
  std::mt19937_64 rng(59);
  EXPECT_TRUE(checkTransfer(executor.handle(), g, host, g, device, rng, 2, 0, 0));
  EXPECT_TRUE(checkTransfer(executor.handle(), g, device, g, host, rng, 2, 0, 0));
}

// 'auto' on the GPU: a host<->device transfer of small rows moving at least staged_min_bytes
// (never by default; 4 MiB set here) goes to staged: 2048 scattered 256-byte slots x 4 layers x K
// and V = 4 MiB, into and out of page_first_direct; every destination byte checked (canary-filled).
TEST(CudaAuto, LargeTransfersOfSmallRowsGoToStaged) {
  REQUIRE_GPU();
  const Geometry dg =
      make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 4, 256, 16, 1, 256);
  Geometry hg = dg;  // the same pool as the host holds it: each page one block per component
  hg.layout = KVIO_LAYOUT_PAGE_FIRST_DIRECT;
  ScopedEnv calibration("KVIO_AUTO_CALIBRATION", nullptr);  // the default calibration
  Executor executor(KVIO_BACKEND_AUTO);
  ASSERT_TRUE(executor.ok());
  ASSERT_EQ(kvio_executor_set_auto_calibration(executor.handle(), "staged_min_bytes = 4M\n"),
            KVIO_STATUS_OK)
      << kvio_last_error();
  GpuPool device(dg, Memory::Device, executor.stream()),
      host(hg, Memory::PinnedHost, executor.stream());
  ASSERT_TRUE(device.ok() && host.ok());
  std::vector<int64_t> scattered, dense;
  for (int64_t i = 0; i < dg.S() / 2; ++i) {
    scattered.push_back(2 * i + 1);
    dense.push_back(i);
  }
  std::mt19937_64 rng(23);
  for (bool backup : {true, false}) {
    SCOPED_TRACE(backup ? "backup" : "load");
    GpuPool& src = backup ? device : host;
    GpuPool& dst = backup ? host : device;
    const Geometry& sg = backup ? dg : hg;
    const Geometry& dstG = backup ? hg : dg;
    const std::vector<int64_t>& srcIdx = backup ? scattered : dense;
    const std::vector<int64_t>& dstIdx = backup ? dense : scattered;
    const Image srcImage = src.random(rng);
    Image expected = dst.filled(kCanary);
    ASSERT_TRUE(src.write(srcImage) && dst.write(expected));
    Submitted submitted;
    ASSERT_TRUE(runTransfer(executor.handle(), src.handle(), dst.handle(), srcIdx, dstIdx, 0, 0, 4,
                            &submitted));
    EXPECT_EQ(submitted.bytes, 4u << 20);
    EXPECT_EQ(submitted.chosenBackend, KVIO_BACKEND_STAGED);
    applyTransfer(sg, srcImage, dstG, &expected, srcIdx, dstIdx, 0, 0, 4);
    Image actual, source;
    ASSERT_TRUE(dst.read(&actual) && src.read(&source));
    EXPECT_TRUE(sameImage(expected, actual, "destination"));
    EXPECT_TRUE(sameImage(srcImage, source, "source"));
  }
}

TEST(CudaKernel, CtaBudgetsAndWarpsGiveTheSameBytes) {
  REQUIRE_GPU();
  DeviceAndHost pools(
      KVIO_BACKEND_KERNEL,
      make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, 2, 64, 16, 4, 64),
      make(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 64, 16, 4, 64));
  ASSERT_TRUE(pools.ok());
  const Executor& executor = pools.executor;
  const Geometry &dg = pools.dg, &hg = pools.hg;
  GpuPool &device = pools.device, &host = pools.host;
  std::mt19937_64 rng(5);
  ASSERT_NO_FATAL_FAILURE(eachLaunchShape(executor.handle(), {1, 2, 3, 4, 8, 16}, {1, 4, 32}, [&] {
    EXPECT_TRUE(checkTransfer(executor.handle(), dg, device, hg, host, rng, 2, 0, 0));
  }));
  // Per-transfer shapes, the executor's setting untouched.
  const std::vector<int64_t> idx = expandPages({0, 9, 33}, 16);
  for (int32_t budget : {1, 5, 16}) {
    uint64_t t = 0;
    const kvio_transfer_desc desc{host.handle(),
                                  device.handle(),
                                  idx.data(),
                                  idx.data(),
                                  static_cast<int64_t>(idx.size()),
                                  0,
                                  0,
                                  2};
    ASSERT_EQ(kvio_submit_launch(executor.handle(), &desc, budget, 2, &t), KVIO_STATUS_OK);
    EXPECT_EQ(kvio_transfer_wait(t, -1), KVIO_STATUS_OK);
    EXPECT_EQ(kvio_transfer_close(t), KVIO_STATUS_OK);
  }
  EXPECT_TRUE(checkTransfer(executor.handle(), hg, host, dg, device, rng, 2, 0, 0));
}

// The kernel's launches so far (kvio_debug_kernel_launches): [0] with the layer tables and
// indices in the kernel parameter, [1] with them uploaded through a staging slot.
std::array<int64_t, 2> kernelLaunches() {
  std::array<int64_t, 2> counts{};
  EXPECT_EQ(kvio_debug_kernel_launches(counts.data()), KVIO_STATUS_OK) << kvio_last_error();
  return counts;
}

// A small job's tables and indices go in the kernel parameter, a large one's are uploaded
// through a slot. The parameter holds 3840 bytes: 16 status bytes, the two layer tables of
// 2 layers x K and V (4 entries of 8 B each) and 16 B per index pair, so 235 pairs fill it
// exactly and 236 do not; 8 pairs, and every token (1024 pairs) on either side. Each transfer's
// path is read from the launch counts; both directions, heads of 6, 24 and 256 B (rows of 12,
// 48 and 512 B: 4-, 16- and 16-byte words), whole destinations against the oracle.
TEST(CudaKernel, SmallJobsInTheParameterAndLargeJobsUploadedMatchOracle) {
  REQUIRE_GPU();
  std::mt19937_64 rng(23);
  for (int64_t hb : {6, 24, 256}) {
    DeviceAndHost p(KVIO_BACKEND_KERNEL,
                    make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, 2, 64, 16, 2, hb),
                    make(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 64, 16, 2, hb));
    ASSERT_TRUE(p.ok());
    for (int64_t pairs : {8, 235, 236, 1024}) {
      const uint64_t e = p.executor.handle();
      const bool inParameter = pairs <= 235;
      for (bool backup : {true, false}) {
        const std::string what = std::string(backup ? "backup" : "load") + ", rows of " +
                                 std::to_string(2 * hb) + " B, " + std::to_string(pairs) + " pairs";
        const std::array<int64_t, 2> before = kernelLaunches();
        EXPECT_TRUE(backup ? checkTransfer(e, p.dg, p.device, p.hg, p.host, rng, 2, 0, 0, pairs)
                           : checkTransfer(e, p.hg, p.host, p.dg, p.device, rng, 2, 0, 0, pairs))
            << what;
        const std::array<int64_t, 2> after = kernelLaunches();
        EXPECT_EQ(after[0] - before[0], inParameter ? 1 : 0) << what << ": launches by value";
        EXPECT_EQ(after[1] - before[1], inParameter ? 0 : 1) << what << ": launches uploaded";
      }
    }
  }
}

// Only the transfer's layers go with a job: a per-layer transfer between pools of 32 layers puts
// one table entry per component and side in the parameter (16 status bytes, 2 x 16 B of tables,
// 16 B per pair: 237 pairs fit, 238 do not), where the whole tables (2 x 64 entries, 1 KiB)
// would leave room for 175. Loads and backups of one layer (17 on both sides, then 3 and 29),
// three layers from different starts, whole destinations against the oracle.
TEST(CudaKernel, OnlyTheTransfersLayersGoInTheParameter) {
  REQUIRE_GPU();
  std::mt19937_64 rng(29);
  DeviceAndHost p(KVIO_BACKEND_KERNEL,
                  make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, 32, 16, 16, 1, 64),
                  make(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 32, 16, 16, 1, 64));
  ASSERT_TRUE(p.ok());
  struct Case {
    int64_t layers, srcLayer, dstLayer, pairs;
  };
  for (const Case& c : {Case{1, 17, 17, 237}, Case{1, 3, 29, 238}, Case{3, 5, 9, 200}}) {
    const uint64_t e = p.executor.handle();
    // 3840 parameter bytes: status, K and V table entries of each layer on both sides, pairs.
    const bool inParameter = c.pairs <= (3840 - 16 - 2 * 2 * 8 * c.layers) / 16;
    for (bool backup : {true, false}) {
      const std::string what = std::string(backup ? "backup" : "load") + ", " +
                               std::to_string(c.layers) + " layers from " +
                               std::to_string(c.srcLayer) + " to " + std::to_string(c.dstLayer) +
                               ", " + std::to_string(c.pairs) + " pairs";
      const std::array<int64_t, 2> before = kernelLaunches();
      EXPECT_TRUE(backup ? checkTransfer(e, p.dg, p.device, p.hg, p.host, rng, c.layers, c.srcLayer,
                                         c.dstLayer, c.pairs)
                         : checkTransfer(e, p.hg, p.host, p.dg, p.device, rng, c.layers, c.srcLayer,
                                         c.dstLayer, c.pairs))
          << what;
      const std::array<int64_t, 2> after = kernelLaunches();
      EXPECT_EQ(after[0] - before[0], inParameter ? 1 : 0) << what << ": launches by value";
      EXPECT_EQ(after[1] - before[1], inParameter ? 0 : 1) << what << ": launches uploaded";
    }
  }
}

// The copy kernel's routines and word widths (copy_routine.cuh): rows of 6 B (2-byte aligned:
// per-row routine), 12 B (4-byte words), 24 B (8), 48, 256, 2064 and 8192 B (16-byte words
// when both sides allow; the wrapped host pool is 8 bytes off 16-byte alignment, so 8-byte
// words there), 8 KiB rows spanning several tiles; CTAs of 16 warps (8 words per lane) and 32
// warps (4 words per lane), 1 and 4 CTAs, both directions, whole destinations against the oracle.
// Runs on the cpu backend under KVIO_GPU_TEST_ON_CPU (the launch shape is then not set).
TEST(CudaKernel, EveryWordClassMatchesOracle) {
  if (!hostEmulation()) REQUIRE_GPU();
  Executor executor(KVIO_BACKEND_KERNEL);
  ASSERT_TRUE(executor.ok());
  std::mt19937_64 rng(17);
  for (int64_t hb : {6, 12, 24, 48, 256, 2064, 8192}) {
    const int64_t ps = hb > 1024 ? 4 : 16;
    const Geometry dg =
        make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, 3, 6, ps, 1, hb);
    const Geometry hg =
        make(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 3, 5, ps, 1, hb);
    GpuPool device(dg, Memory::Device, executor.stream());
    for (Memory hostMemory : {Memory::PinnedHost, Memory::WrappedHost}) {
      GpuPool host(hg, hostMemory, executor.stream());
      ASSERT_TRUE(device.ok() && host.ok());
      for (int32_t budget : {1, 4}) {
        for (int32_t warps : {16, 32}) {
          if (!hostEmulation()) {
            ASSERT_EQ(kvio_executor_set_launch(executor.handle(), budget, warps), KVIO_STATUS_OK);
          }
          const std::string what = "hb " + std::to_string(hb) + " budget " +
                                   std::to_string(budget) + " warps " + std::to_string(warps) +
                                   (hostMemory == Memory::WrappedHost ? " wrapped" : " pinned");
          EXPECT_TRUE(checkTransfer(executor.handle(), dg, device, hg, host, rng, 3, 0, 0))
              << "backup " << what;
          EXPECT_TRUE(checkTransfer(executor.handle(), hg, host, dg, device, rng, 2, 1, 0))
              << "load " << what;
        }
      }
    }
  }
}

TEST(CudaKernel, DeviceIndicesOutOfRangeAreSkippedAndReported) {
  REQUIRE_GPU();
  Executor executor(KVIO_BACKEND_KERNEL);
  ASSERT_TRUE(executor.ok());
  const Geometry g = make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 2, 4, 4, 1, 64);
  GpuPool src(g, Memory::Device, executor.stream());
  GpuPool dst(g, Memory::PinnedHost, executor.stream());
  ASSERT_TRUE(src.ok() && dst.ok());
  std::mt19937_64 rng(9);
  const Image srcImage = src.random(rng);
  Image expected = dst.random(rng);
  ASSERT_TRUE(src.write(srcImage) && dst.write(expected));
  const std::vector<int64_t> s = {0, 1, 1000, 3, -5, 5}, d = {7, 6, 5, 16, 3, 2};
  applyTransfer(g, srcImage, g, &expected, {0, 1, 5}, {7, 6, 2}, 0, 0, 2);
  const DeviceArray<int64_t> indices(2 * s.size());
  ASSERT_TRUE(indices.ok());
  int64_t* const deviceIndices = indices.get();
  // Uploaded on the executor's stream and waited for (pageable source: the wait is needed).
  CUDA_OK(cudaMemcpyAsync(deviceIndices, s.data(), s.size() * 8, cudaMemcpyHostToDevice,
                          executor.stream()));
  CUDA_OK(cudaMemcpyAsync(deviceIndices + s.size(), d.data(), d.size() * 8, cudaMemcpyHostToDevice,
                          executor.stream()));
  CUDA_OK(cudaStreamSynchronize(executor.stream()));
  const kvio_transfer_desc desc{src.handle(),
                                dst.handle(),
                                deviceIndices,
                                deviceIndices + s.size(),
                                static_cast<int64_t>(s.size()),
                                0,
                                0,
                                2};
  uint64_t transfer = 0;
  EXPECT_EQ(kvio_submit_device_indices(executor.handle(), &desc, &transfer), KVIO_STATUS_OK)
      << kvio_last_error();
  if (transfer != 0) {
    EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OUT_OF_RANGE);
    const std::string message = kvio_last_error();
    EXPECT_NE(message.find("skipped 3 index pairs"), std::string::npos) << message;
    EXPECT_NE(message.find("pair 2"), std::string::npos) << message;
    EXPECT_TRUE(dst.holds(expected, "destination"));
    EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
  }
  // Host arrays passed as device indices are refused before anything is launched.
  const kvio_transfer_desc hostDesc{
      src.handle(), dst.handle(), s.data(), d.data(), static_cast<int64_t>(s.size()), 0, 0, 2};
  EXPECT_EQ(kvio_submit_device_indices(executor.handle(), &hostDesc, &transfer),
            KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kvio_last_error()).find("not memory of CUDA device"), std::string::npos)
      << kvio_last_error();
  // Misaligned device arrays (an int32 buffer cast, say) are refused: the kernel's int64 reads
  // would fault and end the context. The context still works after: the destination unchanged.
  const kvio_transfer_desc misaligned{
      src.handle(),
      dst.handle(),
      reinterpret_cast<const int64_t*>(reinterpret_cast<const char*>(deviceIndices) + 4),
      deviceIndices + s.size(),
      2,
      0,
      0,
      2};
  EXPECT_EQ(kvio_submit_device_indices(executor.handle(), &misaligned, &transfer),
            KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kvio_last_error()).find("src_indices at"), std::string::npos)
      << kvio_last_error();
  EXPECT_NE(std::string(kvio_last_error()).find("not 8-byte aligned"), std::string::npos)
      << kvio_last_error();
  // A count past the end of the arrays: the kernel would read beyond the allocation (an illegal
  // address past the end of device memory). More pairs than the 16 destination slots are refused
  // by their count before the arrays' memory is asked about (each slot is written once). A
  // shorter overrun meets the check of the last entry's memory, which is not tested here: how far
  // past a small allocation the driver still answers for it is the driver's (a rounded size).
  const kvio_transfer_desc tooMany{src.handle(),
                                   dst.handle(),
                                   deviceIndices,
                                   deviceIndices + s.size(),
                                   int64_t{1} << 40,
                                   0,
                                   0,
                                   2};
  EXPECT_EQ(kvio_submit_device_indices(executor.handle(), &tooMany, &transfer),
            KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kvio_last_error()).find("index pairs are more than the 16 token slots"),
            std::string::npos)
      << kvio_last_error();
  Image after;
  EXPECT_TRUE(dst.read(&after) && sameImage(expected, after, "destination after the refusals"));
}

// kvio_submit_with: device-resident indices, a launch shape and the overlap mark in one submit,
// on the kernel backend and on 'auto' (which gives device indices to its kernel, marked or not).
// Per-layer device pool to a page_first pinned one, source layers 1-2 to destination layers 0-1;
// the destination canary-filled and compared whole with the oracle. kvio_check_transfer_with
// agrees first, without moving anything, and refuses host arrays given as device ones.
TEST(CudaKernel, SubmitWithTakesDeviceIndicesALaunchShapeAndTheMarkAtOnce) {
  REQUIRE_GPU();
  const Geometry dg = make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, 3, 8, 4, 2, 64);
  const Geometry hg = make(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 8, 4, 2, 64);
  const std::vector<int64_t> s = {0, 31, 7, 12, 20}, d = {5, 1, 30, 12, 8};
  const size_t n = s.size();
  const DeviceArray<int64_t> indices(2 * n);
  ASSERT_TRUE(indices.ok());
  int64_t* const onDevice = indices.get();
  CUDA_OK(cudaMemcpy(onDevice, s.data(), n * sizeof(int64_t), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(onDevice + n, d.data(), n * sizeof(int64_t), cudaMemcpyHostToDevice));
  CUDA_OK(cudaDeviceSynchronize());  // the pageable copies' DMA may still run when they return
  for (const int32_t backend : {KVIO_BACKEND_KERNEL, KVIO_BACKEND_AUTO}) {
    SCOPED_TRACE(kvio_name(KVIO_NAME_BACKEND, backend));
    Executor executor(backend);
    ASSERT_TRUE(executor.ok());
    GpuPool src(dg, Memory::Device, executor.stream());
    GpuPool dst(hg, Memory::PinnedHost, executor.stream());
    ASSERT_TRUE(src.ok() && dst.ok());
    std::mt19937_64 rng(backend == KVIO_BACKEND_KERNEL ? 71 : 72);
    const Image srcImage = src.random(rng);
    Image expected = dst.filled(kCanary);
    ASSERT_TRUE(src.write(srcImage) && dst.write(expected));
    kvio_submit_options options = KVIO_SUBMIT_OPTIONS_INIT;
    options.flags = KVIO_SUBMIT_OVERLAPS_COMPUTE;
    options.cta_budget = 2;
    options.warps_per_cta = 4;
    options.indices_memory = KVIO_INDICES_DEVICE;
    const kvio_transfer_desc desc{
        src.handle(), dst.handle(), onDevice, onDevice + n, static_cast<int64_t>(n), 1, 0, 2};
    EXPECT_EQ(kvio_check_transfer_with(executor.handle(), &desc, &options), KVIO_STATUS_OK)
        << kvio_last_error();
    const kvio_transfer_desc hostArrays{
        src.handle(), dst.handle(), s.data(), d.data(), static_cast<int64_t>(n), 1, 0, 2};
    EXPECT_EQ(kvio_check_transfer_with(executor.handle(), &hostArrays, &options),
              KVIO_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(kvio_last_error()).find("not memory of CUDA device"), std::string::npos)
        << kvio_last_error();
    // A shape past the limits: refused with the rest, nothing launched or moved.
    kvio_submit_options tooWide = options;
    tooWide.warps_per_cta = 33;
    uint64_t transfer = 0;
    EXPECT_EQ(kvio_submit_with(executor.handle(), &desc, &tooWide, &transfer),
              KVIO_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(transfer, 0u);
    const std::array<int64_t, 2> before = kernelLaunches();
    ASSERT_EQ(kvio_submit_with(executor.handle(), &desc, &options, &transfer), KVIO_STATUS_OK)
        << kvio_last_error();
    EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK) << kvio_last_error();
    kvio_transfer_info info{};
    EXPECT_EQ(kvio_transfer_get_info(transfer, &info), KVIO_STATUS_OK);
    EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
    EXPECT_EQ(info.io_backend, backend);
    EXPECT_EQ(info.chosen_backend, KVIO_BACKEND_KERNEL);
    EXPECT_EQ(info.overlaps_compute, 1);
    EXPECT_EQ(info.launches, 1);
    EXPECT_EQ(info.bytes, n * 2 * 2 * 128);  // pairs x layers x K and V x row
    const std::array<int64_t, 2> after = kernelLaunches();
    EXPECT_EQ(after[1] - before[1], 1) << "device indices go through a staging slot";
    applyTransfer(dg, srcImage, hg, &expected, s, d, 1, 0, 2);
    EXPECT_TRUE(dst.holds(expected, "destination"));
    Image source;
    ASSERT_TRUE(src.read(&source));
    EXPECT_TRUE(sameImage(srcImage, source, "source"));
  }
}

// kvio.hpp's forms of kvio_submit_device_indices (DeviceIndices) and kvio_submit_launch
// (TransferOptions) on the kernel backend: one MLA layer_first pool of 2 layers x 16 tokens of
// 64 bytes in device memory, loaded into a pinned one, the whole destination compared each time.
TEST(CudaKernel, CppWrapperTakesDeviceIndicesAndALaunchShape) {
  REQUIRE_GPU();
  constexpr int64_t kTokens = 16, kRowBytes = 64;
  const kvio::PoolSpec spec =
      make(KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 2, 4, 4, 1, kRowBytes).spec();
  kvio::Executor kernel = kvio::Executor::cuda(kvio::IoBackend::Kernel, 0);
  kvio::Pool src = kvio::Pool::allocate(spec, kvio::MemoryKind::CudaDevice, 0);
  kvio::Pool dst = kvio::Pool::allocate(spec, kvio::MemoryKind::HostPinned, 0);
  EXPECT_EQ(src.memory().kind, kvio::MemoryKind::CudaDevice);
  EXPECT_EQ(src.memory().device, 0);
  EXPECT_EQ(dst.memory().kind, kvio::MemoryKind::HostPinned);
  const uint64_t bytes = src.bytes();
  std::vector<uint8_t> source(bytes);
  for (uint64_t i = 0; i < bytes; ++i) source[i] = static_cast<uint8_t>(i * 7 + 3);
  src.copyFrom(0, 0, source.data(), bytes);
  std::vector<uint8_t> expected(bytes, kCanary);
  dst.copyFrom(0, 0, expected.data(), bytes);
  // layer_first MLA: layer l, token t at (l * kTokens + t) * kRowBytes.
  const auto move = [&](const std::vector<int64_t>& s, const std::vector<int64_t>& d, int64_t l) {
    for (size_t i = 0; i < s.size(); ++i) {
      std::memcpy(&expected[static_cast<size_t>((l * kTokens + d[i]) * kRowBytes)],
                  &source[static_cast<size_t>((l * kTokens + s[i]) * kRowBytes)], kRowBytes);
    }
  };
  const auto destination = [&] {
    std::vector<uint8_t> out(bytes);
    dst.copyTo(0, 0, out.data(), bytes);
    return out;
  };
  const std::vector<int64_t> indices = {0, 5, 9, 15, 2, 7, 99, 0};  // src 3, dst 3, src 1, dst 1
  const DeviceArray<int64_t> onDeviceArray(indices.size());
  ASSERT_TRUE(onDeviceArray.ok());
  int64_t* const onDevice = onDeviceArray.get();
  CUDA_OK(cudaMemcpy(onDevice, indices.data(), indices.size() * sizeof(int64_t),
                     cudaMemcpyHostToDevice));
  CUDA_OK(cudaDeviceSynchronize());  // the pageable copy's DMA may still run when it returns
  kvio::transferPerLayer(kernel, src, dst, kvio::DeviceIndices::view(onDevice, 3),
                         kvio::DeviceIndices::view(onDevice + 3, 3), 1, 1)
      .wait();
  move({0, 5, 9}, {15, 2, 7}, 1);
  EXPECT_EQ(destination(), expected) << "device indices, layer 1";
  // An empty batch on a backend that takes device indices: complete, nothing moved.
  kvio::Transfer none =
      kvio::transferPerLayer(kernel, src, dst, kvio::DeviceIndices::view(onDevice, 0),
                             kvio::DeviceIndices::view(onDevice, 0), 0, 0);
  EXPECT_TRUE(none.movesNothing());
  // Slot 99 is outside the pool: the kernel skips it, the transfer fails OUT_OF_RANGE.
  expectError(
      [&] {
        kvio::transferAllLayers(kernel, src, dst, kvio::DeviceIndices::view(onDevice + 6, 1),
                                kvio::DeviceIndices::view(onDevice + 7, 1))
            .wait();
      },
      KVIO_STATUS_OUT_OF_RANGE, {}, "moving slot 99 of 16");
  EXPECT_EQ(destination(), expected) << "after the out-of-range pair";
  // A launch shape for one transfer: one launch, the rows right; beyond the limits refused.
  kvio::TransferOptions shape;
  shape.ctaBudget = 2;
  shape.warpsPerCta = 8;
  kvio::Transfer shaped = kvio::transferPerLayer(kernel, src, dst, {3, 4}, {4, 3}, 0, 0, shape);
  shaped.wait();
  EXPECT_EQ(shaped.info().launches, 1);
  move({3, 4}, {4, 3}, 0);
  EXPECT_EQ(destination(), expected) << "per-transfer launch shape";
  shape.warpsPerCta = 33;
  expectError([&] { (void)kvio::transferPerLayer(kernel, src, dst, {1}, {1}, 0, 0, shape); },
              KVIO_STATUS_INVALID_ARGUMENT, {}, "33 warps per CTA");
  EXPECT_EQ(destination(), expected) << "after the refused shape";
}

TEST(CudaBackends, PageableHostMemoryIsRefused) {
  REQUIRE_GPU();
  const Geometry g = make(KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 1, 2, 4, 1, 64);
  const kvio_pool_spec spec = specOf(g);
  uint64_t pageable = 0;
  ASSERT_EQ(kvio_pool_allocate(&spec, &pageable), KVIO_STATUS_OK);
  for (int32_t backend : {KVIO_BACKEND_KERNEL, KVIO_BACKEND_DIRECT, KVIO_BACKEND_STAGED}) {
    Executor executor(backend);
    ASSERT_TRUE(executor.ok());
    GpuPool device(g, Memory::Device, executor.stream());
    ASSERT_TRUE(device.ok());
    uint64_t transfer = 0;
    const int64_t s[1] = {0}, d[1] = {1};
    EXPECT_EQ(
        kvio_submit_args(executor.handle(), device.handle(), pageable, s, d, 1, 0, 0, 1, &transfer),
        KVIO_STATUS_UNSUPPORTED);
    EXPECT_NE(std::string(kvio_last_error()).find("pinned"), std::string::npos);
    if (backend == KVIO_BACKEND_DIRECT) {
      uint64_t cpu = 0;
      ASSERT_EQ(kvio_executor_create(KVIO_BACKEND_CPU, 1, &cpu), KVIO_STATUS_OK);
      EXPECT_EQ(kvio_submit_args(cpu, device.handle(), pageable, s, d, 1, 0, 0, 1, &transfer),
                KVIO_STATUS_UNSUPPORTED);
      EXPECT_EQ(kvio_executor_close(cpu), KVIO_STATUS_OK);
    }
  }
  EXPECT_EQ(kvio_pool_close(pageable), KVIO_STATUS_OK);
}

// Pinned host to pinned host: direct refuses it before any byte moves (CUDA's copies between host
// buffers are synchronous with the host, not ordered on the stream), staged too (host <-> device
// only); the kernel moves it on the stream, and auto gives it to the kernel whatever its rows.
// Whole destinations: unchanged after a refusal, the oracle's after a transfer.
TEST(CudaBackends, HostToHostGoesToTheKernel) {
  REQUIRE_GPU();
  const Geometry g =
      make(KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 1, 16, 1, 1, 256 << 10);
  std::mt19937_64 rng(67);
  for (int32_t backend :
       {KVIO_BACKEND_DIRECT, KVIO_BACKEND_STAGED, KVIO_BACKEND_KERNEL, KVIO_BACKEND_AUTO}) {
    SCOPED_TRACE(std::string("backend ") + kvio_name(KVIO_NAME_BACKEND, backend));
    Executor executor(backend);
    ASSERT_TRUE(executor.ok());
    GpuPool a(g, Memory::PinnedHost, executor.stream()),
        b(g, Memory::PinnedHost, executor.stream());
    ASSERT_TRUE(a.ok() && b.ok());
    if (backend == KVIO_BACKEND_DIRECT || backend == KVIO_BACKEND_STAGED) {
      const Image before = b.random(rng);
      ASSERT_TRUE(a.write(a.random(rng)) && b.write(before));
      const int64_t s[2] = {0, 5}, d[2] = {3, 9};
      uint64_t transfer = 0;
      EXPECT_EQ(
          kvio_submit_args(executor.handle(), a.handle(), b.handle(), s, d, 2, 0, 0, 1, &transfer),
          KVIO_STATUS_UNSUPPORTED);
      const std::string message = kvio_last_error();
      EXPECT_NE(message.find("host to host"), std::string::npos) << message;
      EXPECT_NE(message.find("'kernel'"), std::string::npos) << message;
      EXPECT_TRUE(b.holds(before, "destination after the refusal"));
      continue;
    }
    Submitted report;
    EXPECT_TRUE(checkTransfer(executor.handle(), g, a, g, b, rng, 1, 0, 0, 8, &report));
    EXPECT_EQ(report.chosenBackend, KVIO_BACKEND_KERNEL);
  }
}

// A wrapped device buffer whose size runs past its allocation is refused when wrapped (its last
// byte is not device memory), not at the first kernel or copy, which would end the context.
TEST(CudaBackends, DeviceMemoryWrappedWithASizePastItsEndIsRefused) {
  REQUIRE_GPU();
  const Geometry g = make(KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 1, 2, 4, 1, 64);
  const kvio_pool_spec spec = specOf(g);
  uint64_t need = 0;
  ASSERT_EQ(kvio_pool_component_bytes(&spec, &need), KVIO_STATUS_OK);
  const DeviceArray<uint8_t> buffer(need);
  ASSERT_TRUE(buffer.ok());
  const uint64_t address = reinterpret_cast<uint64_t>(buffer.get());
  uint64_t pool = 0;
  ASSERT_EQ(kvio_pool_wrap_memory(&spec, KVIO_MEMORY_CUDA_DEVICE, 0, address, need, &pool),
            KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
  const uint64_t tooLarge = uint64_t{1} << 40;  // 1 TiB: its last byte lies in no allocation
  pool = 0;
  EXPECT_EQ(kvio_pool_wrap_memory(&spec, KVIO_MEMORY_CUDA_DEVICE, 0, address, tooLarge, &pool),
            KVIO_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kvio_last_error()).find("runs past the end"), std::string::npos)
      << kvio_last_error();
  EXPECT_EQ(pool, 0u);
}

// The driver's allocation range of device address `address` (cuPointerGetAttribute
// RANGE_START_ADDR / RANGE_SIZE, reached through the runtime): false where it gives none.
bool driverRange(uint64_t address, uint64_t* start, uint64_t* bytes) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion("cuPointerGetAttribute", &function, 12000, cudaEnableDefault,
                                       &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess || function == nullptr) {
    return false;
  }
  const auto get =
      reinterpret_cast<CUresult (*)(void*, CUpointer_attribute, CUdeviceptr)>(function);
  CUdeviceptr rangeStart = 0;
  size_t rangeBytes = 0;
  if (get(&rangeStart, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, address) != CUDA_SUCCESS ||
      get(&rangeBytes, CU_POINTER_ATTRIBUTE_RANGE_SIZE, address) != CUDA_SUCCESS) {
    return false;
  }
  *start = rangeStart;
  *bytes = rangeBytes;
  return true;
}

// A wrapped device region whose first and last bytes are device memory but which spans a gap
// (here a freed allocation between two live ones) is refused when wrapped: every allocation the
// region runs through is followed to its end, not only its two ends checked. The allocations are
// 4 MiB each, which cudaMalloc gives ranges of their own (a small one may be carved from a
// larger block whose range the driver reports instead; then the case skips).
TEST(CudaBackends, DeviceMemoryWrappedAcrossAGapIsRefused) {
  REQUIRE_GPU();
  const Geometry g = make(KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 1, 2, 4, 1, 64);
  const kvio_pool_spec spec = specOf(g);
  uint64_t component = 0;
  ASSERT_EQ(kvio_pool_component_bytes(&spec, &component), KVIO_STATUS_OK);
  const uint64_t need = std::max<uint64_t>(component, uint64_t{4} << 20);
  std::vector<std::unique_ptr<DeviceArray<uint8_t>>> buffers;
  for (int i = 0; i < 3; ++i) {
    buffers.push_back(std::make_unique<DeviceArray<uint8_t>>(need));
    ASSERT_TRUE(buffers.back()->ok());
  }
  std::sort(buffers.begin(), buffers.end(), [](const auto& a, const auto& b) {
    return reinterpret_cast<uint64_t>(a->get()) < reinterpret_cast<uint64_t>(b->get());
  });
  const uint64_t first = reinterpret_cast<uint64_t>(buffers[0]->get());
  const uint64_t last = reinterpret_cast<uint64_t>(buffers[2]->get());
  const uint64_t bytes = last + need - first;
  uint64_t rangeStart = 0, rangeBytes = 0;
  if (!driverRange(first, &rangeStart, &rangeBytes) || rangeStart != first || rangeBytes != need) {
    GTEST_SKIP() << "the driver does not report a " << need << "-byte cudaMalloc as a range of "
                 << "its own (start 0x" << std::hex << rangeStart << std::dec << ", " << rangeBytes
                 << " bytes): the walk cannot be shown here";
  }
  uint64_t pool = 0;
  const uint64_t middle = reinterpret_cast<uint64_t>(buffers[1]->get());
  if (middle == first + need && last == middle + need) {
    // Back to back (as the driver often places them): one region over the three is taken.
    ASSERT_EQ(kvio_pool_wrap_memory(&spec, KVIO_MEMORY_CUDA_DEVICE, 0, first, bytes, &pool),
              KVIO_STATUS_OK)
        << kvio_last_error();
    EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
    pool = 0;
  }
  buffers[1].reset();  // the gap
  EXPECT_EQ(kvio_pool_wrap_memory(&spec, KVIO_MEMORY_CUDA_DEVICE, 0, first, bytes, &pool),
            KVIO_STATUS_INVALID_ARGUMENT)
      << "a region of " << bytes << " bytes from the lowest of three allocations to the end of "
      << "the highest, the middle one freed";
  const std::string message = kvio_last_error();
  EXPECT_NE(message.find("of device region 0"), std::string::npos) << message;
  EXPECT_NE(message.find("runs past the end of an allocation"), std::string::npos) << message;
  EXPECT_EQ(pool, 0u);
  // Each live allocation alone is taken.
  for (const uint64_t address : {first, last}) {
    ASSERT_EQ(kvio_pool_wrap_memory(&spec, KVIO_MEMORY_CUDA_DEVICE, 0, address, need, &pool),
              KVIO_STATUS_OK)
        << kvio_last_error();
    EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
  }
}

/// A CUDA context the test creates on device 0 (cuCtxCreate: pushed, current on this thread),
/// and device memory in it: both go however the test ends (a failed ASSERT included), so later
/// cases in this process (memcheck runs many) do not run in it. The driver calls are reached
/// through the runtime, at the CUDA 12.0 ABI (cuCtxCreate_v2), as kvio reaches its own.
class CallerContext {
 public:
  CallerContext() {
    CUdevice device = 0;
    ok_ = entry("cuCtxCreate", &create_) && entry("cuCtxDestroy", &destroy_) &&
          entry("cuCtxPopCurrent", &pop_) && entry("cuCtxPushCurrent", &push_) &&
          entry("cuCtxGetCurrent", &getCurrent_) && entry("cuMemAlloc", &memAlloc_) &&
          entry("cuMemFree", &memFree_) && entry("cuDeviceGet", &deviceGet_);
    if (!ok_) return;
    const CUresult got = deviceGet_(&device, 0);
    const CUresult created = got == CUDA_SUCCESS ? create_(&context_, 0, device) : got;
    if (created != CUDA_SUCCESS) {
      context_ = nullptr;
      ok_ = false;
      ADD_FAILURE() << (got != CUDA_SUCCESS ? "cuDeviceGet(0)" : "cuCtxCreate (v2, flags 0)")
                    << " failed with CUresult " << static_cast<int>(created);
    }
  }
  ~CallerContext() {
    if (context_ == nullptr) return;
    CUcontext current = nullptr;
    if (getCurrent_(&current) != CUDA_SUCCESS || current != context_) push_(context_);
    if (memory_ != 0) memFree_(memory_);
    destroy_(context_);  // pops it: the thread's context before it is current again
  }
  CallerContext(const CallerContext&) = delete;
  CallerContext& operator=(const CallerContext&) = delete;

  /// Why a process cannot create a context of its own on device 0 here (empty if it can): in
  /// the exclusive-process compute mode a device holds one context at a time (the primary
  /// context kvio and the runtime use), so cuCtxCreate fails and the case these tests guard
  /// against cannot arise; in the prohibited mode no context can be made.
  static std::string unavailable() {
    int mode = cudaComputeModeDefault;
    if (cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, 0) != cudaSuccess) {
      cudaGetLastError();
      return "";  // let cuCtxCreate say
    }
    if (mode == cudaComputeModeExclusiveProcess) {
      return "device 0 is in the exclusive-process compute mode: one context at a time, so no "
             "caller-created context can exist beside the primary one";
    }
    if (mode == cudaComputeModeProhibited) return "device 0 is in the prohibited compute mode";
    return "";
  }
  bool ok() const { return ok_; }
  CUcontext get() const { return context_; }
  /// Pops the context: the thread's earlier one is current again. True when it was on top.
  bool pop() {
    CUcontext popped = nullptr;
    return pop_(&popped) == CUDA_SUCCESS && popped == context_;
  }
  /// `bytes` of device memory in the context (current), freed with it; 0 on failure.
  CUdeviceptr allocate(size_t bytes) {
    if (memory_ == 0 && memAlloc_(&memory_, bytes) != CUDA_SUCCESS) memory_ = 0;
    return memory_;
  }

 private:
  template <class F>
  static bool entry(const char* name, F* out) {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found{};
    const bool ok = cudaGetDriverEntryPointByVersion(name, &function, 12000, cudaEnableDefault,
                                                     &found) == cudaSuccess &&
                    found == cudaDriverEntryPointSuccess && function != nullptr;
    if (!ok) ADD_FAILURE() << "the driver has no " << name;
    *out = reinterpret_cast<F>(function);
    return ok;
  }

  bool ok_ = false;
  CUcontext context_ = nullptr;
  CUdeviceptr memory_ = 0;
  CUresult (*create_)(CUcontext*, unsigned int, CUdevice) = nullptr;
  CUresult (*destroy_)(CUcontext) = nullptr;
  CUresult (*pop_)(CUcontext*) = nullptr;
  CUresult (*push_)(CUcontext) = nullptr;
  CUresult (*getCurrent_)(CUcontext*) = nullptr;
  CUresult (*memAlloc_)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*memFree_)(CUdeviceptr) = nullptr;
  CUresult (*deviceGet_)(CUdevice*, int) = nullptr;
};

// Device memory allocated in a context the caller created (cuCtxCreate) is in that context's
// address space, which kvio's kernels and copies (in the primary context) cannot reach: refused
// when wrapped, with that context current or not, not at the first kernel (an illegal address
// that ends the context).
TEST(CudaBackends, DeviceMemoryOfAContextTheCallerCreatedIsRefused) {
  REQUIRE_GPU();
  const Geometry g = make(KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 1, 2, 4, 1, 64);
  const kvio_pool_spec spec = specOf(g);
  uint64_t need = 0;
  ASSERT_EQ(kvio_pool_component_bytes(&spec, &need), KVIO_STATUS_OK);
  if (const std::string why = CallerContext::unavailable(); !why.empty()) GTEST_SKIP() << why;
  CallerContext own;
  ASSERT_TRUE(own.ok());
  const CUdeviceptr memory = own.allocate(need);
  ASSERT_NE(memory, 0u);
  for (bool ownCurrent : {true, false}) {
    SCOPED_TRACE(ownCurrent ? "the caller's context current"
                            : "the caller's context popped (the thread's earlier one current)");
    if (!ownCurrent) {
      ASSERT_TRUE(own.pop());
    }
    uint64_t pool = 0;
    EXPECT_EQ(kvio_pool_wrap_memory(&spec, KVIO_MEMORY_CUDA_DEVICE, 0, memory, need, &pool),
              KVIO_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(kvio_last_error()).find("other than device 0's primary context"),
              std::string::npos)
        << kvio_last_error();
    EXPECT_EQ(pool, 0u);
  }
  // Memory of the primary context (the runtime's) is still taken.
  const DeviceArray<uint8_t> buffer(need);
  ASSERT_TRUE(buffer.ok());
  uint64_t pool = 0;
  EXPECT_EQ(kvio_pool_wrap_memory(&spec, KVIO_MEMORY_CUDA_DEVICE, 0,
                                  reinterpret_cast<uint64_t>(buffer.get()), need, &pool),
            KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(kvio_pool_close(pool), KVIO_STATUS_OK);
}

// A stream created while a context of the caller's own is current belongs to that context:
// kvio's kernels launched to it fail (invalid resource handle) and its events cannot be recorded
// on it, at the first transfer. Refused when the executor is created, with that context current
// or not; a stream of the primary context is still taken.
TEST(CudaBackends, AStreamOfAContextTheCallerCreatedIsRefused) {
  REQUIRE_GPU();
  if (const std::string why = CallerContext::unavailable(); !why.empty()) GTEST_SKIP() << why;
  CallerContext own;
  ASSERT_TRUE(own.ok());
  struct Stream {  // destroyed before its context (declared after it)
    cudaStream_t handle = nullptr;
    ~Stream() {
      if (handle != nullptr) cudaStreamDestroy(handle);
    }
  } theirs, ours;
  CUDA_OK(cudaStreamCreateWithFlags(&theirs.handle, cudaStreamNonBlocking));
  for (bool ownCurrent : {true, false}) {
    SCOPED_TRACE(ownCurrent ? "the caller's context current"
                            : "the caller's context popped (the thread's earlier one current)");
    if (!ownCurrent) {
      ASSERT_TRUE(own.pop());
    }
    for (int32_t backend :
         {KVIO_BACKEND_KERNEL, KVIO_BACKEND_DIRECT, KVIO_BACKEND_STAGED, KVIO_BACKEND_AUTO}) {
      SCOPED_TRACE(kvio_name(KVIO_NAME_BACKEND, backend));
      uint64_t executor = 7;
      EXPECT_EQ(kvio_executor_create_cuda(backend, 0, reinterpret_cast<uint64_t>(theirs.handle), 0,
                                          0, &executor),
                KVIO_STATUS_INVALID_ARGUMENT);
      EXPECT_NE(std::string(kvio_last_error()).find("other than device 0's primary context"),
                std::string::npos)
          << kvio_last_error();
      EXPECT_EQ(executor, 7u);
    }
  }
  CUDA_OK(cudaSetDevice(0));  // the primary context, current
  CUDA_OK(cudaStreamCreateWithFlags(&ours.handle, cudaStreamNonBlocking));
  uint64_t executor = 0;
  EXPECT_EQ(kvio_executor_create_cuda(KVIO_BACKEND_KERNEL, 0,
                                      reinterpret_cast<uint64_t>(ours.handle), 0, 0, &executor),
            KVIO_STATUS_OK)
      << kvio_last_error();
  EXPECT_EQ(kvio_executor_close(executor), KVIO_STATUS_OK);
}

// Caller host memory wrapped, used, closed and freed, again and again: the allocator hands the
// same addresses back, so a registration kvio kept after close would be found "already
// registered" and stale (issue 10, failure 2).
TEST(CudaBackends, CallerHostMemoryWrappedClosedFreedAndWrappedAgain) {
  REQUIRE_GPU();
  const Geometry dg = make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, 2, 8, 16, 2, 64);
  const Geometry hg = make(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 9, 16, 2, 64);
  for (int32_t backend : {KVIO_BACKEND_KERNEL, KVIO_BACKEND_DIRECT}) {
    Executor executor(backend);
    ASSERT_TRUE(executor.ok());
    GpuPool device(dg, Memory::Device, executor.stream());
    ASSERT_TRUE(device.ok());
    std::mt19937_64 rng(21 + backend);
    for (int i = 0; i < 12; ++i) {
      SCOPED_TRACE(std::string(kvio_name(KVIO_NAME_BACKEND, backend)) + " round " +
                   std::to_string(i));
      GpuPool host(hg, Memory::WrappedHost, executor.stream());
      ASSERT_TRUE(host.ok());
      ASSERT_TRUE(checkTransfer(executor.handle(), dg, device, hg, host, rng, 2, 0, 0));
      ASSERT_TRUE(checkTransfer(executor.handle(), hg, host, dg, device, rng, 1, 1, 1));
    }
  }
}

TEST(CudaBackends, CallerStreamAndTransferEvents) {
  REQUIRE_GPU();
  cudaStream_t stream = nullptr, consumer = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking));
  const Geometry dg =
      make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, 4, 8, 16, 2, 128);
  const Geometry hg =
      make(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 4, 8, 16, 2, 128);
  for (int32_t backend : {KVIO_BACKEND_KERNEL, KVIO_BACKEND_DIRECT, KVIO_BACKEND_STAGED}) {
    SCOPED_TRACE(kvio_name(KVIO_NAME_BACKEND, backend));
    Executor executor(backend, reinterpret_cast<uint64_t>(stream), 2, 8);
    ASSERT_TRUE(executor.ok());
    EXPECT_EQ(executor.stream(), stream);
    GpuPool device(dg, Memory::Device, stream), host(hg, Memory::PinnedHost, stream);
    ASSERT_TRUE(device.ok() && host.ok());
    std::mt19937_64 rng(11);
    // Per-layer loads, each signalling its own event; the consumer stream waits on layer 2's.
    std::vector<uint64_t> transfers;
    const std::vector<int64_t> idx = expandPages({0, 3, 5}, 16);
    for (int64_t layer = 0; layer < 4; ++layer) {
      uint64_t t = 0;
      EXPECT_EQ(kvio_submit_args(executor.handle(), host.handle(), device.handle(), idx.data(),
                                 idx.data(), static_cast<int64_t>(idx.size()), layer, layer, 1, &t),
                KVIO_STATUS_OK)
          << kvio_last_error();
      if (t != 0) transfers.push_back(t);
    }
    if (transfers.size() == 4) {
      uint64_t event = 0;
      EXPECT_EQ(kvio_transfer_cuda_event(transfers[2], &event), KVIO_STATUS_OK);
      EXPECT_NE(event, 0u);
      if (event != 0) {
        EXPECT_TRUE(
            CUDA_CHECK(cudaStreamWaitEvent(consumer, reinterpret_cast<cudaEvent_t>(event), 0)));
        EXPECT_TRUE(CUDA_CHECK(cudaStreamSynchronize(consumer)));
        EXPECT_EQ(kvio_transfer_is_done(transfers[2]), 1);
      }
    }
    for (uint64_t t : transfers) {
      EXPECT_EQ(kvio_transfer_wait(t, -1), KVIO_STATUS_OK) << kvio_last_error();
      EXPECT_EQ(kvio_transfer_close(t), KVIO_STATUS_OK);
    }
    EXPECT_TRUE(checkTransfer(executor.handle(), hg, host, dg, device, rng, 4, 0, 0));
  }
  CUDA_OK(cudaStreamDestroy(stream));
  CUDA_OK(cudaStreamDestroy(consumer));
}

// Stream 0 is the legacy default stream, as in the CUDA runtime's calls (torch's default stream
// hands out 0), not a request for kvio's own stream: the executor reports 0 as its stream and its
// transfers run behind the caller's work there. A slow kernel and then a memset of the whole
// device pool go to stream 0 and a backup of every token is submitted at once: the host pool
// must hold the memset's byte everywhere (on kvio's own non-blocking stream the backup could run
// before the memset, and reads the previous bytes).
TEST(CudaBackends, StreamZeroIsTheLegacyDefaultStream) {
  REQUIRE_GPU();
  const Geometry dg = make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Single, 2, 8, 16, 2, 64);
  const Geometry hg = make(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 8, 16, 2, 64);
  DeviceArray<float> busy(64 * 256);
  ASSERT_TRUE(busy.ok());
  ASSERT_TRUE(CUDA_CHECK(cudaMemset(busy.get(), 0, 64 * 256 * sizeof(float))));
  // auto hands its kernel candidate's stream (0) to the direct and staged ones.
  for (int32_t backend :
       {KVIO_BACKEND_KERNEL, KVIO_BACKEND_DIRECT, KVIO_BACKEND_STAGED, KVIO_BACKEND_AUTO}) {
    SCOPED_TRACE(kvio_name(KVIO_NAME_BACKEND, backend));
    Executor executor(backend, 0);
    ASSERT_TRUE(executor.ok());
    EXPECT_EQ(executor.stream(), nullptr);
    GpuPool device(dg, Memory::Device, nullptr), host(hg, Memory::PinnedHost, nullptr);
    ASSERT_TRUE(device.ok() && host.ok());
    std::mt19937_64 rng(12 + backend);
    ASSERT_TRUE(checkTransfer(executor.handle(), hg, host, dg, device, rng, 2, 0, 0));
    ASSERT_TRUE(checkTransfer(executor.handle(), dg, device, hg, host, rng, 2, 0, 0));
    ASSERT_TRUE(host.write(host.filled(0x11)));
    uint64_t region = 0;
    ASSERT_EQ(kvio_pool_region(device.handle(), 0, &region, nullptr, nullptr), KVIO_STATUS_OK);
    ASSERT_TRUE(CUDA_CHECK(kvioTestLaunchBusy(nullptr, busy.get(), 64, 256, 1 << 18)));
    ASSERT_TRUE(CUDA_CHECK(
        cudaMemsetAsync(reinterpret_cast<void*>(region), 0x5A, device.regionBytes(), nullptr)));
    std::vector<int64_t> all(static_cast<size_t>(dg.S()));
    std::iota(all.begin(), all.end(), 0);
    uint64_t transfer = 0;
    ASSERT_EQ(kvio_submit_args(executor.handle(), device.handle(), host.handle(), all.data(),
                               all.data(), static_cast<int64_t>(all.size()), 0, 0, dg.L, &transfer),
              KVIO_STATUS_OK)
        << kvio_last_error();
    EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK) << kvio_last_error();
    EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
    Image image;
    ASSERT_TRUE(host.read(&image));
    EXPECT_TRUE(image.buffers == host.filled(0x5A).buffers);
  }
}

// A transfer cannot be captured into a CUDA graph (kvio reuses its staging and event once it has
// seen it complete, which a replay would still read): a submit to an executor whose stream is
// being captured is refused with UNSUPPORTED before anything is queued, the capture ends valid
// and empty, no byte of the destination changed, and the same executor moves bytes afterwards.
TEST(CudaBackends, ASubmitOnAStreamBeingCapturedIsRefusedAndTheCaptureStaysValid) {
  REQUIRE_GPU();
  const OwnedStream executorStream, otherStream;
  ASSERT_TRUE(executorStream.ok() && otherStream.ok());
  cudaStream_t stream = executorStream.get(), other = otherStream.get();
  const Geometry dg =
      make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, 2, 8, 16, 2, 128);
  const Geometry hg =
      make(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 8, 16, 2, 128);
  const std::vector<int64_t> idx = expandPages({1, 4}, 16);
  for (int32_t backend :
       {KVIO_BACKEND_KERNEL, KVIO_BACKEND_DIRECT, KVIO_BACKEND_STAGED, KVIO_BACKEND_AUTO}) {
    SCOPED_TRACE(kvio_name(KVIO_NAME_BACKEND, backend));
    Executor executor(backend, reinterpret_cast<uint64_t>(stream));
    ASSERT_TRUE(executor.ok());
    GpuPool device(dg, Memory::Device, other), host(hg, Memory::PinnedHost, other);
    ASSERT_TRUE(device.ok() && host.ok());
    std::mt19937_64 rng(31 + backend);
    const Image before = device.random(rng);
    ASSERT_TRUE(device.write(before));
    CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    uint64_t transfer = 0;
    const kvio_status refused =
        kvio_submit_args(executor.handle(), host.handle(), device.handle(), idx.data(), idx.data(),
                         static_cast<int64_t>(idx.size()), 0, 0, 2, &transfer);
    const std::string message = kvio_last_error();
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    EXPECT_EQ(refused, KVIO_STATUS_UNSUPPORTED) << message;
    EXPECT_NE(message.find("being captured into a CUDA graph"), std::string::npos) << message;
    EXPECT_EQ(transfer, 0u);
    EXPECT_TRUE(CUDA_CHECK(ended)) << "the capture was invalidated";
    if (graph != nullptr) {
      size_t nodes = 1;
      EXPECT_TRUE(CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes)));
      EXPECT_EQ(nodes, 0u) << "kvio queued work into the capture";
      EXPECT_TRUE(CUDA_CHECK(cudaGraphDestroy(graph)));
    }
    Image after;
    ASSERT_TRUE(device.read(&after));
    EXPECT_TRUE(sameImage(before, after, "device pool after the refused submit"));
    EXPECT_TRUE(checkTransfer(executor.handle(), hg, host, dg, device, rng, 2, 0, 0));
  }
}

// A transfer submitted, waited for and closed on a thread that is capturing another stream in
// global mode (torch.cuda.graph's default): by an executor with a finished transfer's event left
// for the submit to reap, and by a fresh one, whose first transfer creates its event and staging.
// CUDA forbids event queries, synchronisation and allocation there unless the thread's capture
// mode is relaxed, and such a call would invalidate the capture. kvio relaxes it for its own
// calls: the capture ends valid with only its own node, and the transfer moved every byte.
TEST(CudaBackends, TransfersBesideAGlobalCaptureLeaveItValid) {
  REQUIRE_GPU();
  GlobalCapture capture;
  const OwnedStream otherStream;
  ASSERT_TRUE(capture.ok() && otherStream.ok());
  cudaStream_t other = otherStream.get();
  const Geometry dg =
      make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, 2, 8, 16, 2, 128);
  const Geometry hg =
      make(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 8, 16, 2, 128);
  const std::vector<int64_t> idx = expandPages({1, 4}, 16);
  for (int32_t backend :
       {KVIO_BACKEND_KERNEL, KVIO_BACKEND_DIRECT, KVIO_BACKEND_STAGED, KVIO_BACKEND_AUTO}) {
    for (const bool warm : {true, false}) {
      SCOPED_TRACE(std::string(kvio_name(KVIO_NAME_BACKEND, backend)) +
                   (warm ? ", after a transfer" : ", its first transfer"));
      Executor executor(backend);
      ASSERT_TRUE(executor.ok());
      GpuPool device(dg, Memory::Device, other), host(hg, Memory::PinnedHost, other);
      ASSERT_TRUE(device.ok() && host.ok());
      std::mt19937_64 rng(41 + backend);
      if (warm) {
        ASSERT_TRUE(checkTransfer(executor.handle(), dg, device, hg, host, rng, 2, 0, 0));
      }
      const Image source = device.random(rng);
      Image expected = host.random(rng);
      ASSERT_TRUE(device.write(source) && host.write(expected));
      ASSERT_TRUE(capture.begin());
      uint64_t transfer = 0;
      const kvio_status submitted =
          kvio_submit_args(executor.handle(), device.handle(), host.handle(), idx.data(),
                           idx.data(), static_cast<int64_t>(idx.size()), 0, 0, 2, &transfer);
      std::string message = kvio_last_error();
      kvio_status waited = submitted;
      if (transfer != 0) {
        waited = kvio_transfer_wait(transfer, -1);
        if (waited != KVIO_STATUS_OK) message = kvio_last_error();
        EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
      }
      EXPECT_TRUE(capture.end());
      EXPECT_EQ(submitted, KVIO_STATUS_OK) << message;
      EXPECT_EQ(waited, KVIO_STATUS_OK) << message;
      applyTransfer(dg, source, hg, &expected, idx, idx, 0, 0, 2);
      EXPECT_TRUE(host.holds(expected, "host pool after the transfer beside the capture"));
    }
  }
}

// A pool's and an executor's whole life on a thread capturing another stream in global mode:
// kvio's allocations (cudaMalloc and its zeroing, cudaHostAlloc), registration of caller host
// memory (cudaHostRegister), kvio_pool_copy (a synchronized private stream), an executor's
// creation, one transfer and close, and the pools' close (cudaFree, cudaFreeHost,
// cudaHostUnregister) are all calls CUDA forbids there unless the thread's capture mode is
// relaxed; one would fail and invalidate the capture. The capture ends valid with only its own
// node, and the transfer moved every byte. Only kvio calls run inside the capture: the test's
// own reads and writes (synchronisations) come before and after.
TEST(CudaBackends, PoolsAndExecutorsMadeAndClosedBesideAGlobalCaptureLeaveItValid) {
  REQUIRE_GPU();
  GlobalCapture capture;
  ASSERT_TRUE(capture.ok());
  const Geometry dg =
      make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 2, 8, 16, 2, 128);
  const Geometry hg =
      make(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 8, 16, 2, 128);
  const kvio_pool_spec deviceSpec = specOf(dg), hostSpec = specOf(hg);
  const size_t deviceBytes = static_cast<size_t>(dg.regionBytes());
  const size_t hostBytes = static_cast<size_t>(hg.regionBytes());
  const std::vector<int64_t> idx = expandPages({1, 4}, 16);
  for (int32_t backend :
       {KVIO_BACKEND_KERNEL, KVIO_BACKEND_DIRECT, KVIO_BACKEND_STAGED, KVIO_BACKEND_AUTO}) {
    SCOPED_TRACE(kvio_name(KVIO_NAME_BACKEND, backend));
    std::mt19937_64 rng(61 + backend);
    Image source, expected;
    source.buffers.emplace_back(deviceBytes);
    fillRandom(source.buffers[0].data(), deviceBytes, rng);
    expected.buffers.emplace_back(hostBytes);
    fillRandom(expected.buffers[0].data(), hostBytes, rng);  // the canary
    std::vector<uint8_t> callerHost(hostBytes + 64);
    uint8_t* const wrapped = callerHost.data() + 8;
    std::memcpy(wrapped, expected.buffers[0].data(), hostBytes);

    // Inside the capture: kvio calls only, each after the previous one worked.
    ASSERT_TRUE(capture.begin());
    std::string failed;  // the first kvio call that failed, and why
    const auto step = [&failed](kvio_status status, const char* what) {
      if (status != KVIO_STATUS_OK && failed.empty()) {
        failed = std::string(what) + ": " + kvio_status_name(status) + " " + kvio_last_error();
      }
      return failed.empty();
    };
    uint64_t devicePool = 0, pinnedPool = 0, wrappedPool = 0, executor = 0, transfer = 0;
    if (step(kvio_pool_allocate_memory(&deviceSpec, KVIO_MEMORY_CUDA_DEVICE, 0, &devicePool),
             "allocating a device pool") &&
        step(kvio_pool_allocate_memory(&hostSpec, KVIO_MEMORY_HOST_PINNED, 0, &pinnedPool),
             "allocating a pinned host pool") &&
        step(kvio_pool_wrap_memory(&hostSpec, KVIO_MEMORY_HOST_PINNED, 0,
                                   reinterpret_cast<uint64_t>(wrapped), hostBytes, &wrappedPool),
             "wrapping caller host memory") &&
        step(kvio_pool_copy(devicePool, 0, 0, reinterpret_cast<uint64_t>(source.buffers[0].data()),
                            deviceBytes, KVIO_COPY_HOST_TO_POOL),
             "kvio_pool_copy to the device pool") &&
        step(kvio_executor_create_cuda(backend, 0, KVIO_CUDA_OWN_STREAM, 0, 0, &executor),
             "creating the executor") &&
        step(kvio_submit_args(executor, devicePool, wrappedPool, idx.data(), idx.data(),
                              static_cast<int64_t>(idx.size()), 0, 0, 2, &transfer),
             "submitting")) {
      step(kvio_transfer_wait(transfer, -1), "waiting");
    }
    if (transfer != 0) step(kvio_transfer_close(transfer), "closing the transfer");
    if (executor != 0) step(kvio_executor_close(executor), "closing the executor");
    for (uint64_t pool : {devicePool, pinnedPool, wrappedPool}) {
      if (pool != 0) step(kvio_pool_close(pool), "closing a pool");
    }
    EXPECT_TRUE(capture.end());
    EXPECT_TRUE(failed.empty()) << failed;
    applyTransfer(dg, source, hg, &expected, idx, idx, 0, 0, 2);
    Image actual;
    actual.buffers.emplace_back(wrapped, wrapped + hostBytes);
    EXPECT_TRUE(sameImage(expected, actual, "caller host memory after the transfer"));
  }
}

// Every backend on device 1, driven from a thread whose current device is 0: kvio makes its
// device current around its own calls (a kernel launch to a stream of another device than the
// current one fails) and puts the thread's device back. Caller device buffers (one per layer) and
// kvio-allocated pools, both directions.
TEST(CudaBackends, TransfersOnTheSecondDeviceFromAThreadOnTheFirst) {
  REQUIRE_GPU();
  int count = 0;
  CUDA_OK(cudaGetDeviceCount(&count));
  if (count < 2) GTEST_SKIP() << "needs two CUDA devices (" << count << " here)";
  CUDA_OK(cudaSetDevice(0));
  // kvio works on device 0 too, so that a scope choosing "any device kvio uses" would not land on
  // device 1 by chance.
  const Executor onTheFirst(KVIO_BACKEND_KERNEL);
  ASSERT_TRUE(onTheFirst.ok());
  const Geometry perLayer =
      make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, 2, 8, 16, 2, 128);
  const Geometry allocated =
      make(KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 2, 8, 16, 1, 64);
  const Geometry hostMha =
      make(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 8, 16, 2, 128);
  const Geometry hostMla =
      make(KVIO_KIND_MLA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 8, 16, 1, 64);
  for (int32_t backend :
       {KVIO_BACKEND_KERNEL, KVIO_BACKEND_DIRECT, KVIO_BACKEND_STAGED, KVIO_BACKEND_AUTO}) {
    SCOPED_TRACE(kvio_name(KVIO_NAME_BACKEND, backend));
    {  // the executor's creation, transfers and close
      Executor executor(backend, KVIO_CUDA_OWN_STREAM, 0, 0, 1);
      ASSERT_TRUE(executor.ok());
      std::mt19937_64 rng(51 + backend);
      // Each device pool with its host pool: host layer 1 loaded into device layer 0, then every
      // layer backed up.
      for (const auto& [dg, hg] :
           {std::pair<const Geometry&, const Geometry&>(perLayer, hostMha),
            std::pair<const Geometry&, const Geometry&>(allocated, hostMla)}) {
        GpuPool device(dg, Memory::Device, executor.stream(), 1);
        GpuPool host(hg, Memory::PinnedHost, executor.stream(), 1);
        ASSERT_TRUE(device.ok() && host.ok());
        EXPECT_TRUE(checkTransfer(executor.handle(), hg, host, dg, device, rng, 1, 1, 0));
        EXPECT_TRUE(checkTransfer(executor.handle(), dg, device, hg, host, rng, 2, 0, 0));
      }
    }
    int current = -1;
    CUDA_OK(cudaGetDevice(&current));
    EXPECT_EQ(current, 0) << "kvio left the thread on another device";
  }
}

TEST(CudaBackends, AStreamOfAnotherDeviceIsRefused) {
  REQUIRE_GPU();
  int count = 0;
  CUDA_OK(cudaGetDeviceCount(&count));
  if (count < 2) GTEST_SKIP() << "needs two CUDA devices (" << count << " here)";
  int before = 0;
  CUDA_OK(cudaGetDevice(&before));
  CUDA_OK(cudaSetDevice(1));
  cudaStream_t stream = nullptr;
  const cudaError_t created = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  CUDA_OK(cudaSetDevice(before));
  CUDA_OK(created);
  for (int32_t backend :
       {KVIO_BACKEND_KERNEL, KVIO_BACKEND_DIRECT, KVIO_BACKEND_STAGED, KVIO_BACKEND_AUTO}) {
    SCOPED_TRACE(kvio_name(KVIO_NAME_BACKEND, backend));
    uint64_t executor = 7;
    EXPECT_EQ(
        kvio_executor_create_cuda(backend, 0, reinterpret_cast<uint64_t>(stream), 0, 0, &executor),
        KVIO_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(kvio_last_error()).find("belongs to CUDA device 1"), std::string::npos)
        << kvio_last_error();
    if (backend == KVIO_BACKEND_AUTO) {  // named as asked, not as the candidate that refused
      EXPECT_EQ(std::string(kvio_last_error()).rfind("creating an 'auto' executor: ", 0), 0u)
          << kvio_last_error();
    }
    EXPECT_EQ(executor, 7u);
  }
  CUDA_OK(cudaStreamDestroy(stream));
}

TEST(CudaBackends, ClosingPoolsAndTransfersEarlyIsSafe) {
  REQUIRE_GPU();
  const Geometry g =
      make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 8, 256, 16, 8, 128);
  const kvio_pool_spec spec = specOf(g);
  for (int32_t backend : {KVIO_BACKEND_KERNEL, KVIO_BACKEND_DIRECT, KVIO_BACKEND_STAGED}) {
    Executor executor(backend);
    ASSERT_TRUE(executor.ok());
    for (int i = 0; i < 20; ++i) {
      uint64_t a = 0, b = 0, t = 0;
      ASSERT_EQ(kvio_pool_allocate_memory(&spec, KVIO_MEMORY_CUDA_DEVICE, 0, &a), KVIO_STATUS_OK);
      ASSERT_EQ(kvio_pool_allocate_memory(&spec, KVIO_MEMORY_HOST_PINNED, 0, &b), KVIO_STATUS_OK);
      const std::vector<int64_t> idx = expandPages({1, 7, 100, 255}, 16);
      ASSERT_EQ(kvio_submit_args(executor.handle(), a, b, idx.data(), idx.data(),
                                 static_cast<int64_t>(idx.size()), 0, 0, 8, &t),
                KVIO_STATUS_OK);
      EXPECT_EQ(kvio_pool_close(a), KVIO_STATUS_OK);
      EXPECT_EQ(kvio_pool_close(b), KVIO_STATUS_OK);
      EXPECT_EQ(kvio_transfer_close(t), KVIO_STATUS_OK);  // never waited for
    }
  }
}

// A serving engine's worker threads may never have touched CUDA: a submit and a wait from a
// fresh thread must make the executor's device current themselves (the driver's batch copies
// need a current context, and the executor's spare events mean the submit may make no runtime
// call before them), and leave the thread without a context, as they found it. Each backend
// runs a transfer on this thread first, so that spare events exist; the fresh thread then only
// submits, waits and closes (the pools are written and read here, since those copies would
// bind a context), creates and closes an executor of the backend, and reads its context before
// and after with cuCtxGetCurrent.
TEST(CudaBackends, SubmitsAndWaitsFromAThreadWithoutAContext) {
  REQUIRE_GPU();
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult found{};
  ASSERT_EQ(
      cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &entry, 12000, cudaEnableDefault, &found),
      cudaSuccess);
  ASSERT_EQ(found, cudaDriverEntryPointSuccess);
  const auto currentContext = reinterpret_cast<CUresult (*)(CUcontext*)>(entry);  // cuCtxGetCurrent
  for (int32_t backend : {KVIO_BACKEND_KERNEL, KVIO_BACKEND_DIRECT, KVIO_BACKEND_STAGED}) {
    SCOPED_TRACE(kvio_name(KVIO_NAME_BACKEND, backend));
    DeviceAndHost p(backend,
                    make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, 2, 64, 16, 2, 64),
                    make(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 64, 16, 2, 64));
    ASSERT_TRUE(p.ok());
    std::mt19937_64 rng(43);
    const uint64_t e = p.executor.handle();
    EXPECT_TRUE(checkTransfer(e, p.dg, p.device, p.hg, p.host, rng, 2, 0, 0, 64));
    for (bool backup : {false, true}) {
      SCOPED_TRACE(backup ? "backup" : "load");
      GpuPool& src = backup ? p.device : p.host;
      GpuPool& dst = backup ? p.host : p.device;
      const Geometry& sg = backup ? p.dg : p.hg;
      const Geometry& dg = backup ? p.hg : p.dg;
      const Image srcImage = src.random(rng);
      Image expected = dst.random(rng);
      ASSERT_TRUE(src.write(srcImage) && dst.write(expected));
      const std::vector<int64_t> srcIdx = distinct(rng, sg.S(), 64);
      const std::vector<int64_t> dstIdx = distinct(rng, dg.S(), 64);
      bool moved = false;
      CUcontext before = reinterpret_cast<CUcontext>(&entry);  // not null unless the call says so
      CUcontext after = reinterpret_cast<CUcontext>(&entry);
      std::thread fresh([&] {
        currentContext(&before);
        Submitted submitted;
        moved = runTransfer(e, src.handle(), dst.handle(), srcIdx, dstIdx, 0, 0, 2, &submitted);
        uint64_t another = 0;
        EXPECT_EQ(kvio_executor_create_cuda(backend, 0, KVIO_CUDA_OWN_STREAM, 0, 0, &another),
                  KVIO_STATUS_OK)
            << kvio_last_error();
        EXPECT_EQ(kvio_executor_close(another), KVIO_STATUS_OK);
        currentContext(&after);
      });
      fresh.join();
      EXPECT_EQ(before, nullptr) << "the fresh thread had a context before kvio";
      EXPECT_EQ(after, nullptr) << "kvio left a context current on the thread";
      ASSERT_TRUE(moved);
      applyTransfer(sg, srcImage, dg, &expected, srcIdx, dstIdx, 0, 0, 2);
      EXPECT_TRUE(dst.holds(expected, "destination"));
    }
  }
}

// direct sends its copies to the driver's batch calls where the driver has them (12.8 and
// later): a transfer issues no single copy, only batches. MHA over 2 layers gives 2-D copies
// (cudaMemcpy3DBatchAsync); MLA over 1 layer, scattered tokens, gives rows of one copy each
// (cuMemcpyBatchAsync). Without this a failed entry-point lookup or a "not supported" answer
// would pass every other test on the one-by-one fallback.
TEST(CudaDirect, CopiesGoToTheBatchCalls) {
  REQUIRE_GPU();
  int driver = 0;
  ASSERT_EQ(cudaDriverGetVersion(&driver), cudaSuccess);
  if (driver < 12080) GTEST_SKIP() << "driver " << driver << " has no batch copies";
  struct Shape {
    int32_t kind;
    int64_t layers;
    size_t batchCall;  // the kvio_debug_copy_engine_calls entry that must grow: 2 (1-D), 3
  };
  for (const Shape& shape : {Shape{KVIO_KIND_MHA, 2, 3}, Shape{KVIO_KIND_MLA, 1, 2}}) {
    SCOPED_TRACE(shape.kind == KVIO_KIND_MHA ? "mha, 2 layers" : "mla, 1 layer");
    DeviceAndHost p(
        KVIO_BACKEND_DIRECT,
        make(shape.kind, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, shape.layers, 64, 16, 2, 64),
        make(shape.kind, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, shape.layers, 64, 16, 2, 64));
    ASSERT_TRUE(p.ok());
    std::mt19937_64 rng(47);
    for (bool backup : {true, false}) {
      SCOPED_TRACE(backup ? "backup" : "load");
      int64_t before[4] = {0, 0, 0, 0}, after[4] = {0, 0, 0, 0};
      ASSERT_EQ(kvio_debug_copy_engine_calls(before), KVIO_STATUS_OK);
      const uint64_t e = p.executor.handle();
      const int64_t layers = shape.layers;
      EXPECT_TRUE(backup ? checkTransfer(e, p.dg, p.device, p.hg, p.host, rng, layers, 0, 0, 200)
                         : checkTransfer(e, p.hg, p.host, p.dg, p.device, rng, layers, 0, 0, 200));
      ASSERT_EQ(kvio_debug_copy_engine_calls(after), KVIO_STATUS_OK);
      EXPECT_EQ(after[0] - before[0], 0) << "single 1-D copies";
      EXPECT_EQ(after[1] - before[1], 0) << "single 2-D copies";
      EXPECT_GE(after[shape.batchCall] - before[shape.batchCall], 1)
          << (shape.batchCall == 2 ? "cuMemcpyBatchAsync" : "cudaMemcpy3DBatchAsync") << " calls";
    }
  }
}

// KVIO_DIRECT_STREAMS=4 deals a large transfer's copies to four streams (the executor's and
// three of its own) and joins them back: 32 scattered rows of 64 KiB (2 MiB) go out as four
// groups, each with its own batch call (at least 12 engine calls for the three transfers of a
// round, where one stream makes at most 6). Each round: a backup device -> host, waited for and
// the host pool checked at once (pinned memory, read by the host: without the join, the
// executor's stream, and so the transfer's event, would not wait for the side streams); then
// another backup followed, without a wait, by a load of its host rows in reverse order into a
// second device pool, so the load's first group reads what the backup's last group wrote
// (another stream): without the fork (side streams start after the executor's stream) the load
// reads rows not yet written. Eight rounds per setting, whole pools against the oracle.
TEST(CudaDirect, TransfersDealtToSeveralStreamsKeepTheirOrderAndMatchOracle) {
  REQUIRE_GPU();
  int driver = 0;
  ASSERT_EQ(cudaDriverGetVersion(&driver), cudaSuccess);
  const Geometry dg =
      make(KVIO_KIND_MLA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 1, 64, 1, 1, 64 << 10);
  const Geometry hg =
      make(KVIO_KIND_MLA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 1, 64, 1, 1, 64 << 10);
  for (const char* streams : {"1", "4"}) {
    SCOPED_TRACE(std::string("KVIO_DIRECT_STREAMS=") + streams);
    ScopedEnv env("KVIO_DIRECT_STREAMS", streams);
    Executor executor(KVIO_BACKEND_DIRECT);
    ASSERT_TRUE(executor.ok());
    GpuPool device(dg, Memory::Device, executor.stream());
    GpuPool host(hg, Memory::PinnedHost, executor.stream());
    GpuPool second(dg, Memory::Device, executor.stream());
    ASSERT_TRUE(device.ok() && host.ok() && second.ok());
    std::mt19937_64 rng(53);
    const auto submit = [&](uint64_t src, uint64_t dst, const std::vector<int64_t>& s,
                            const std::vector<int64_t>& d) {
      uint64_t transfer = 0;
      EXPECT_EQ(kvio_submit_args(executor.handle(), src, dst, s.data(), d.data(),
                                 static_cast<int64_t>(s.size()), 0, 0, 1, &transfer),
                KVIO_STATUS_OK)
          << kvio_last_error();
      return transfer;
    };
    const auto finish = [](uint64_t transfer) {
      EXPECT_EQ(kvio_transfer_wait(transfer, -1), KVIO_STATUS_OK) << kvio_last_error();
      EXPECT_EQ(kvio_transfer_close(transfer), KVIO_STATUS_OK);
    };
    for (int round = 0; round < 8; ++round) {
      SCOPED_TRACE("round " + std::to_string(round));
      const Image deviceImage = device.random(rng);
      Image hostImage = host.random(rng);
      Image secondImage = second.random(rng);
      ASSERT_TRUE(device.write(deviceImage) && host.write(hostImage) && second.write(secondImage));
      int64_t before[4] = {0, 0, 0, 0}, after[4] = {0, 0, 0, 0};
      ASSERT_EQ(kvio_debug_copy_engine_calls(before), KVIO_STATUS_OK);
      // The join: a backup's rows are all in host memory when its wait returns.
      const std::vector<int64_t> a = distinct(rng, dg.S(), 32);
      const std::vector<int64_t> h = distinct(rng, hg.S(), 32);
      const uint64_t first = submit(device.handle(), host.handle(), a, h);
      ASSERT_NE(first, 0u);
      finish(first);
      applyTransfer(dg, deviceImage, hg, &hostImage, a, h, 0, 0, 1);
      EXPECT_TRUE(host.holds(hostImage, "host pool after the first backup"));
      // The fork: a load queued behind a backup reads what the backup wrote.
      const std::vector<int64_t> a2 = distinct(rng, dg.S(), 32);
      const std::vector<int64_t> h2 = distinct(rng, hg.S(), 32);
      const std::vector<int64_t> reversed(h2.rbegin(), h2.rend());
      const std::vector<int64_t> e = distinct(rng, dg.S(), 32);
      const uint64_t backup = submit(device.handle(), host.handle(), a2, h2);
      const uint64_t load = submit(host.handle(), second.handle(), reversed, e);
      ASSERT_TRUE(backup != 0 && load != 0);
      finish(load);
      finish(backup);
      ASSERT_EQ(kvio_debug_copy_engine_calls(after), KVIO_STATUS_OK);
      applyTransfer(dg, deviceImage, hg, &hostImage, a2, h2, 0, 0, 1);
      applyTransfer(hg, hostImage, dg, &secondImage, reversed, e, 0, 0, 1);
      EXPECT_TRUE(host.holds(hostImage, "host pool"));
      EXPECT_TRUE(second.holds(secondImage, "second device pool"));
      int64_t calls = 0;
      for (int k = 0; k < 4; ++k) calls += after[k] - before[k];
      if (std::string(streams) == "4") {
        EXPECT_GE(calls, 12) << "engine calls of the three transfers";
      } else if (driver >= 12080) {
        EXPECT_LE(calls, 6) << "engine calls of the three transfers";
      }
      if (::testing::Test::HasFailure()) return;
    }
  }
}

// KVIO_DIRECT_STREAMS other than 1 to 8 makes the creation of a direct executor fail, naming it.
TEST(CudaDirect, ABadStreamCountIsRefusedAtCreation) {
  REQUIRE_GPU();
  for (const char* value : {"0", "9", "-1", "2x", " 2", "12"}) {
    ScopedEnv env("KVIO_DIRECT_STREAMS", value);
    uint64_t executor = 0;
    EXPECT_EQ(
        kvio_executor_create_cuda(KVIO_BACKEND_DIRECT, 0, KVIO_CUDA_OWN_STREAM, 0, 0, &executor),
        KVIO_STATUS_INVALID_ARGUMENT)
        << value;
    EXPECT_EQ(executor, 0u) << value;
    const std::string message = kvio_last_error();
    EXPECT_NE(message.find("KVIO_DIRECT_STREAMS='" + std::string(value) + "'"), std::string::npos)
        << message;
  }
}

// staged reports its work in kvio_transfer_info: a gather/scatter launch per chunk and a
// copy-engine copy per host run (at least one a chunk). With a 12 KiB staging buffer, each chunk
// carries less than 12 KiB, so a transfer of B bytes takes at least B / 12 KiB launches; every
// byte is checked against the oracle, both directions.
TEST(CudaStaged, ReportsALaunchPerChunkAndACopyPerHostRun) {
  REQUIRE_GPU();
  ScopedEnv env("KVIO_STAGED_BYTES", "12K");
  DeviceAndHost p(
      KVIO_BACKEND_STAGED,
      make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 2, 16, 16, 2, 64),
      make(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST_DIRECT, Form::Allocated, 2, 16, 16, 2, 64));
  ASSERT_TRUE(p.ok());
  std::mt19937_64 rng(29);
  for (int64_t pairs : {1, 64, 256}) {
    for (bool backup : {true, false}) {
      Submitted report;
      const uint64_t e = p.executor.handle();
      EXPECT_TRUE(
          backup ? checkTransfer(e, p.dg, p.device, p.hg, p.host, rng, 2, 0, 0, pairs, &report)
                 : checkTransfer(e, p.hg, p.host, p.dg, p.device, rng, 2, 0, 0, pairs, &report));
      const int64_t bytes = pairs * 2 /* layers */ * 2 /* K, V */ * 128;
      SCOPED_TRACE(std::to_string(pairs) + " pairs, " + (backup ? "backup" : "load"));
      EXPECT_EQ(report.bytes, static_cast<uint64_t>(bytes));
      EXPECT_GE(report.launches, (bytes + 12 * 1024 - 1) / (12 * 1024));
      EXPECT_GE(report.copies, report.launches);
    }
  }
}

// The gather/scatter launch shape (kvio_executor_set_launch on a staged executor) changes
// how many threads move the bytes, never which: every shape moves what the oracle says, chunks
// cut small (12 KiB) so that each transfer launches several times; direct has no shape.
TEST(CudaStaged, LaunchShapesGiveTheSameBytes) {
  REQUIRE_GPU();
  ScopedEnv env("KVIO_STAGED_BYTES", "12K");
  DeviceAndHost p(KVIO_BACKEND_STAGED,
                  make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::PerLayer, 2, 64, 16, 2, 64),
                  make(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 64, 16, 2, 64));
  ASSERT_TRUE(p.ok());
  std::mt19937_64 rng(31);
  const uint64_t e = p.executor.handle();
  ASSERT_NO_FATAL_FAILURE(eachLaunchShape(e, {1, 3, 8}, {1, 32}, [&] {
    EXPECT_TRUE(checkTransfer(e, p.dg, p.device, p.hg, p.host, rng, 2, 0, 0));
    EXPECT_TRUE(checkTransfer(e, p.hg, p.host, p.dg, p.device, rng, 2, 0, 0));
  }));
  Executor direct(KVIO_BACKEND_DIRECT);
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(kvio_executor_set_launch(direct.handle(), 2, 8), KVIO_STATUS_UNSUPPORTED);
  EXPECT_NE(std::string(kvio_last_error()).find("'direct' executor"), std::string::npos)
      << kvio_last_error();
}

// A transfer of over 131072 separate device rows has over 4 MiB of segment tables, uploaded
// from the plan's pageable memory instead of a pinned slot; the plan must outlive the upload.
// 140000 scattered tokens x 2 layers x K and V: about 260000 segments; each transfer is
// awaited, so this checks the path's bytes, not the plan's lifetime (a race the GPU would have
// to lose).
TEST(CudaStaged, TablesOverFourMiBGoFromThePlan) {
  REQUIRE_GPU();
  DeviceAndHost p(
      KVIO_BACKEND_STAGED,
      make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 2, 16384, 16, 1, 64),
      make(KVIO_KIND_MHA, KVIO_LAYOUT_PAGE_FIRST, Form::Allocated, 2, 16384, 16, 1, 64));
  ASSERT_TRUE(p.ok());
  std::mt19937_64 rng(53);
  const uint64_t e = p.executor.handle();
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    EXPECT_TRUE(checkTransfer(e, p.dg, p.device, p.hg, p.host, rng, 2, 0, 0, 140000));
    EXPECT_TRUE(checkTransfer(e, p.hg, p.host, p.dg, p.device, rng, 2, 0, 0, 140000));
  }
}

// staged moves between pinned host and device memory only: device to device is refused before
// any byte moves (the destination keeps its canary); an invalid KVIO_STAGED_BYTES fails the
// executor's creation naming the variable.
TEST(CudaStaged, RefusesDeviceToDeviceAndABadStagingSize) {
  REQUIRE_GPU();
  const Geometry g = make(KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, Form::Allocated, 2, 4, 4, 1, 64);
  Executor executor(KVIO_BACKEND_STAGED);
  ASSERT_TRUE(executor.ok());
  GpuPool a(g, Memory::Device, executor.stream()), b(g, Memory::Device, executor.stream());
  ASSERT_TRUE(a.ok() && b.ok());
  std::mt19937_64 rng(5);
  ASSERT_TRUE(a.write(a.random(rng)));
  const Image canary = b.filled(kCanary);
  ASSERT_TRUE(b.write(canary));
  uint64_t transfer = 0;
  const int64_t s[2] = {0, 3}, d[2] = {1, 2};
  EXPECT_EQ(
      kvio_submit_args(executor.handle(), a.handle(), b.handle(), s, d, 2, 0, 0, 2, &transfer),
      KVIO_STATUS_UNSUPPORTED);
  EXPECT_NE(std::string(kvio_last_error()).find("device to device"), std::string::npos)
      << kvio_last_error();
  Image after;
  ASSERT_TRUE(b.read(&after));
  EXPECT_TRUE(sameImage(canary, after, "destination"));
  for (const char* bad : {"1K", "lots", "0", "never"}) {
    SCOPED_TRACE(bad);
    ScopedEnv env("KVIO_STAGED_BYTES", bad);
    uint64_t handle = 0;
    EXPECT_EQ(
        kvio_executor_create_cuda(KVIO_BACKEND_STAGED, 0, KVIO_CUDA_OWN_STREAM, 0, 0, &handle),
        KVIO_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(kvio_last_error()).find("KVIO_STAGED_BYTES"), std::string::npos)
        << kvio_last_error();
    EXPECT_EQ(handle, 0u);
  }
}

}  // namespace
}  // namespace kvio_test
