// kvio C++ API: header-only RAII classes over the C ABI (kvio.h), for C++ serving stacks.
// Errors become kvio::Error exceptions carrying the status and the library's message.
//
//   kvio::Executor cpu(kvio::IoBackend::Cpu);
//   kvio::Pool device = kvio::Pool::allocate(deviceSpec);
//   kvio::Pool host = kvio::Pool::allocate(hostSpec);
//   kvio::transferAllLayers(cpu, device, host, deviceSlots, hostSlots).wait();   // backup
//   kvio::transferPerLayer(cpu, host, device, hostSlots, deviceSlots, 0, 0).wait(); // load
//
// Every named operation is the one general transfer (any layout to any layout, with a layer
// map) with its own index and layer conventions. C++14 or later; from C++17 a Transfer left
// unused is a warning ([[nodiscard]]: a transfer dropped unawaited reports no failure).
#ifndef KVIO_KVIO_HPP_
#define KVIO_KVIO_HPP_

#if __cplusplus >= 201703L || (defined(_MSVC_LANG) && _MSVC_LANG >= 201703L)
#define KVIO_NODISCARD [[nodiscard]]
#else
#define KVIO_NODISCARD
#endif

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kvio/kvio.h"

namespace kvio {

class Error : public std::runtime_error {
 public:
  Error(kvio_status status, const std::string& message)
      : std::runtime_error(std::string(kvio_status_name(status)) + ": " + message),
        status_(status) {}
  kvio_status status() const { return status_; }

 private:
  kvio_status status_;
};

inline void check(kvio_status status) {
  if (status != KVIO_STATUS_OK) throw Error(status, kvio_last_error());
}

// The enumerations of kvio.h as C++ enums, from kvio_enums.def (its CppName column): e.g.
// Layout::PageFirstDirect is KVIO_LAYOUT_PAGE_FIRST_DIRECT.
// clang-format off
enum class PoolKind : int32_t {
#define KVIO_DEF_KIND(id, cpp, value, name) cpp = KVIO_KIND_##id,
#include "kvio/kvio_enums.def"
};
enum class Layout : int32_t {
#define KVIO_DEF_LAYOUT(id, cpp, value, name) cpp = KVIO_LAYOUT_##id,
#include "kvio/kvio_enums.def"
};
enum class IoBackend : int32_t {
#define KVIO_DEF_BACKEND(id, cpp, value, name) cpp = KVIO_BACKEND_##id,
#include "kvio/kvio_enums.def"
};
enum class Granularity : int32_t {
#define KVIO_DEF_GRANULARITY(id, cpp, value, name) cpp = KVIO_GRANULARITY_##id,
#include "kvio/kvio_enums.def"
};
// clang-format on

/// Parses the strings users type ("page_first_direct", "kernel_ascend", ...).
inline Layout parseLayout(const std::string& text) {
  int32_t value = 0;
  check(kvio_parse_name(KVIO_NAME_LAYOUT, text.c_str(), &value));
  return static_cast<Layout>(value);
}
inline IoBackend parseIoBackend(const std::string& text) {
  int32_t value = 0;
  check(kvio_parse_name(KVIO_NAME_BACKEND, text.c_str(), &value));
  return static_cast<IoBackend>(value);
}

struct PoolSpec {
  PoolKind kind = PoolKind::Mha;
  Layout layout = Layout::LayerFirst;
  int64_t numLayers = 1;
  int64_t numPages = 1;
  int64_t pageSize = 1;
  int64_t headNum = 1;
  int64_t headBytes = 1;

  kvio_pool_spec toC() const {
    return kvio_pool_spec{static_cast<int32_t>(kind),
                          static_cast<int32_t>(layout),
                          numLayers,
                          numPages,
                          pageSize,
                          headNum,
                          headBytes};
  }
  int64_t tokens() const { return numPages * pageSize; }
  uint64_t componentBytes() const {
    const kvio_pool_spec c = toC();
    uint64_t bytes = 0;
    check(kvio_pool_component_bytes(&c, &bytes));
    return bytes;
  }
};

/// Int64 token indices: a view of a vector or of memory the caller owns (read during the
/// submit only), or, from a braced list ({4, 5, 6}), a copy the Indices keeps.
struct Indices {
  const int64_t* data = nullptr;
  int64_t size = 0;
  Indices(const int64_t* d, int64_t n) : data(d), size(n) {}
  Indices(const std::vector<int64_t>& v)
      : data(v.data()), size(static_cast<int64_t>(v.size())) {}  // NOLINT
  /// A braced list is copied: without this, {0, 1} would bind to (pointer, count) (0 is a null
  /// pointer constant) and name no index at all.
  Indices(std::initializer_list<int64_t> list)  // NOLINT
      : owned_(std::make_shared<const std::vector<int64_t>>(list)) {
    data = owned_->data();
    size = static_cast<int64_t>(owned_->size());
  }
  // Copies share the braced list's copy; a move is a copy (a moved-from Indices keeps what it
  // points at alive).
  Indices(const Indices&) = default;
  Indices& operator=(const Indices&) = default;

 private:
  std::shared_ptr<const std::vector<int64_t>> owned_;  // a braced list's copy; else null
};

/// Which layers move: src layers [srcStart, srcStart + count) to dst [dstStart, ...).
struct LayerMap {
  int64_t srcStart = 0;
  int64_t dstStart = 0;
  int64_t count = 1;
};

class Pool {
 public:
  /// Memory allocated by kvio: host memory by default (2 MiB aligned, huge pages advised,
  /// zeroed), or memory of another KVIO_MEMORY_* kind on `device` (kvio.h).
  static Pool allocate(const PoolSpec& spec, int32_t memoryKind = KVIO_MEMORY_HOST,
                       int32_t device = -1) {
    const kvio_pool_spec c = spec.toC();
    uint64_t handle = 0;
    check(kvio_pool_allocate_memory(&c, memoryKind, device, &handle));
    return Pool(handle, spec);
  }
  /// Caller-owned memory: all components one after the other.
  static Pool wrap(const PoolSpec& spec, void* data, uint64_t bytes,
                   int32_t memoryKind = KVIO_MEMORY_HOST, int32_t device = -1) {
    const kvio_pool_spec c = spec.toC();
    uint64_t handle = 0;
    check(kvio_pool_wrap_memory(&c, memoryKind, device, reinterpret_cast<uint64_t>(data), bytes,
                                &handle));
    return Pool(handle, spec);
  }
  /// Caller-owned memory, one buffer per component (K and V tensors, Ascend 5-D buffers).
  static Pool wrapComponents(const PoolSpec& spec, const std::vector<void*>& components,
                             uint64_t bytesEach, int32_t memoryKind = KVIO_MEMORY_HOST,
                             int32_t device = -1) {
    return wrapAddresses(
        spec, components,
        [&](const kvio_pool_spec* c, const uint64_t* a, size_t n, uint64_t* handle) {
          return kvio_pool_wrap_components_memory(c, memoryKind, device, a, static_cast<int32_t>(n),
                                                  bytesEach, handle);
        });
  }
  /// Caller-owned per-layer buffers (layer_first): table[c * numLayers + l].
  static Pool wrapLayerTable(const PoolSpec& spec, const std::vector<void*>& table,
                             uint64_t bytesEach, int32_t memoryKind = KVIO_MEMORY_HOST,
                             int32_t device = -1) {
    return wrapAddresses(
        spec, table, [&](const kvio_pool_spec* c, const uint64_t* a, size_t n, uint64_t* handle) {
          return kvio_pool_wrap_layer_table_memory(c, memoryKind, device, a,
                                                   static_cast<int64_t>(n), bytesEach, handle);
        });
  }

  Pool(Pool&& other) noexcept
      : handle_(std::exchange(other.handle_, 0)),
        closed_(std::exchange(other.closed_, 0)),
        spec_(other.spec_) {}
  /// Closes this pool first (close()), then takes other's; the closed handle closeAndWait()
  /// would have waited on is not kept: call closeAndWait() before assigning when the old
  /// memory must be known released (wrapped memory the caller will free).
  Pool& operator=(Pool&& other) noexcept {
    if (this != &other) {
      close();
      handle_ = std::exchange(other.handle_, 0);
      closed_ = std::exchange(other.closed_, 0);
      spec_ = other.spec_;
    }
    return *this;
  }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  ~Pool() { close(); }

  /// Closes the handle (kvio_pool_close, docs/memory-lifetime.md). With no transfer of this
  /// pool still running, kvio's use of the memory ends before close() returns (wrapped memory
  /// may be freed right after); otherwise when the last of them completes: use closeAndWait()
  /// to know when.
  void close() {
    if (handle_ != 0) {
      kvio_pool_close(handle_);
      closed_ = handle_;
    }
    handle_ = 0;
  }
  /// Closes the handle if open, then waits until kvio no longer uses the pool's memory: every
  /// transfer submitted with it has completed, kvio's allocation is freed and its registration
  /// of wrapped memory has ended (kvio_pool_close_wait). True once wrapped memory may be freed;
  /// false when a transfer was still running after `timeout` (the pool stays closed; call again
  /// to wait more). A negative timeout waits as long as it takes; zero only checks.
  bool closeAndWait(std::chrono::nanoseconds timeout = std::chrono::nanoseconds(-1)) {
    close();
    if (closed_ == 0) return true;
    const kvio_status status = kvio_pool_close_wait(closed_, timeout.count());
    if (status == KVIO_STATUS_TIMEOUT) return false;
    closed_ = 0;
    check(status);
    return true;
  }
  uint64_t handle() const { return handle_; }
  const PoolSpec& spec() const { return spec_; }
  int64_t regions() const {
    int64_t count = 0;
    check(kvio_pool_region(handle_, 0, nullptr, nullptr, &count));
    return count;
  }
  uint8_t* data(int64_t region = 0) const {
    uint64_t address = 0;
    check(kvio_pool_region(handle_, region, &address, nullptr, nullptr));
    return reinterpret_cast<uint8_t*>(address);
  }
  uint64_t bytes(int64_t region = 0) const {
    uint64_t bytes = 0;
    check(kvio_pool_region(handle_, region, nullptr, &bytes, nullptr));
    return bytes;
  }
  /// Reads `bytes` of region `region` from byte `offset` into host memory `out`, through the
  /// pool's backend (device memory included); synchronous, not ordered with transfers in flight
  /// (kvio_pool_copy). For tests, debugging and warm-up.
  void copyTo(int64_t region, uint64_t offset, void* out, uint64_t bytes) const {
    check(kvio_pool_copy(handle_, region, offset, reinterpret_cast<uint64_t>(out), bytes,
                         KVIO_COPY_POOL_TO_HOST));
  }
  /// Writes `bytes` of host memory `in` into region `region` at byte `offset` (as copyTo).
  void copyFrom(int64_t region, uint64_t offset, const void* in, uint64_t bytes) {
    check(kvio_pool_copy(handle_, region, offset, reinterpret_cast<uint64_t>(in), bytes,
                         KVIO_COPY_HOST_TO_POOL));
  }

 private:
  Pool(uint64_t handle, const PoolSpec& spec) : handle_(handle), spec_(spec) {}
  // A pool wrapped around caller buffers given as pointers: wrap(spec, addresses, count,
  // &handle) is the C entry point that takes them.
  template <class Wrap>
  static Pool wrapAddresses(const PoolSpec& spec, const std::vector<void*>& pointers, Wrap&& wrap) {
    const kvio_pool_spec c = spec.toC();
    std::vector<uint64_t> addresses;
    for (void* p : pointers) addresses.push_back(reinterpret_cast<uint64_t>(p));
    uint64_t handle = 0;
    check(wrap(&c, addresses.data(), addresses.size(), &handle));
    return Pool(handle, spec);
  }
  uint64_t handle_ = 0;
  uint64_t closed_ = 0;  // the handle once closed, until closeAndWait saw the memory released
  PoolSpec spec_;
};

/// Completion handle of one submitted transfer. Destroying it does not cancel the transfer, but
/// a transfer dropped unawaited reports no failure: hence [[nodiscard]] (C++17).
class KVIO_NODISCARD Transfer {
 public:
  explicit Transfer(uint64_t handle) : handle_(handle) {}
  /// A transfer of no index pairs (empty index lists), checked and complete: it moved 0 bytes,
  /// and has no handle, no event (cudaEvent() 0: test empty() before waiting on it) and no
  /// info. It is complete at once, not ordered after earlier transfers on its executor: it
  /// does not stand for them (wait on a transfer that moved bytes for that).
  static Transfer completedEmpty() {
    Transfer t(0);
    t.empty_ = true;
    return t;
  }
  Transfer(Transfer&& other) noexcept
      : handle_(std::exchange(other.handle_, 0)), empty_(std::exchange(other.empty_, false)) {}
  Transfer& operator=(Transfer&& other) noexcept {
    if (this != &other) {
      release();
      handle_ = std::exchange(other.handle_, 0);
      empty_ = std::exchange(other.empty_, false);
    }
    return *this;
  }
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;
  ~Transfer() { release(); }

  void wait() const {
    if (!empty_) check(kvio_transfer_wait(handle_, -1));
  }
  /// False on timeout; throws if the transfer failed.
  bool waitFor(std::chrono::nanoseconds timeout) const {
    if (empty_) return true;
    const kvio_status status = kvio_transfer_wait(handle_, timeout.count());
    if (status == KVIO_STATUS_TIMEOUT) return false;
    check(status);
    return true;
  }
  bool done() const {
    if (empty_) return true;
    const int32_t done = kvio_transfer_is_done(handle_);
    if (done < 0) check(-done);
    return done == 1;
  }
  uint64_t bytes() const {
    uint64_t bytes = 0;
    if (!empty_) check(kvio_transfer_bytes(handle_, &bytes));
    return bytes;
  }
  /// What the transfer is and its times (kvio_transfer_get_info, kvio_transfer_timing).
  /// INVALID_ARGUMENT for an empty transfer, which kvio never saw.
  kvio_transfer_info info() const {
    kvio_transfer_info info{};
    check(kvio_transfer_get_info(handle_, &info));
    return info;
  }
  /// The cudaEvent_t recorded after the transfer's work on its executor's stream, for another
  /// stream to wait on (kvio_transfer_cuda_event); 0 for an empty transfer (nothing to wait
  /// for). UNSUPPORTED for transfers of other backends.
  uint64_t cudaEvent() const { return event(kvio_transfer_cuda_event); }
  /// The same for kernel_ascend transfers: an aclrtEvent (kvio_transfer_ascend_event).
  uint64_t ascendEvent() const { return event(kvio_transfer_ascend_event); }
  uint64_t handle() const { return handle_; }
  bool empty() const { return empty_; }

 private:
  uint64_t event(kvio_status (*query)(uint64_t, uint64_t*)) const {
    uint64_t event = 0;
    if (!empty_) check(query(handle_, &event));
    return event;
  }
  void release() {
    if (handle_ != 0) kvio_transfer_close(handle_);
    handle_ = 0;
  }
  uint64_t handle_;
  bool empty_ = false;
};

/// Runs transfers of one io backend in submission order (a stream).
class Executor {
 public:
  explicit Executor(IoBackend backend, int32_t threads = 0) {
    check(kvio_executor_create(static_cast<int32_t>(backend), threads, &handle_));
  }
  /// A CUDA executor (kernel, direct, staged, auto) on `device`, ordering its work on `stream`
  /// (a cudaStream_t the caller keeps alive until the executor is closed; KVIO_CUDA_OWN_STREAM:
  /// kvio creates one), with a launch shape (0: the backend's defaults)
  /// (kvio_executor_create_cuda).
  static Executor cuda(IoBackend backend, int32_t device, uint64_t stream = KVIO_CUDA_OWN_STREAM,
                       int32_t ctaBudget = 0, int32_t warpsPerCta = 0) {
    uint64_t handle = 0;
    check(kvio_executor_create_cuda(static_cast<int32_t>(backend), device, stream, ctaBudget,
                                    warpsPerCta, &handle));
    return Executor(handle);
  }
  /// A kernel_ascend executor on NPU `device`, on `stream` (an aclrtStream, or
  /// KVIO_ASCEND_OWN_STREAM) (kvio_executor_create_ascend).
  static Executor ascend(int32_t device, uint64_t stream = KVIO_ASCEND_OWN_STREAM) {
    uint64_t handle = 0;
    check(kvio_executor_create_ascend(device, stream, &handle));
    return Executor(handle);
  }
  Executor(Executor&& other) noexcept : handle_(std::exchange(other.handle_, 0)) {}
  Executor& operator=(Executor&& other) noexcept {
    if (this != &other) {
      close();
      handle_ = std::exchange(other.handle_, 0);
    }
    return *this;
  }
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;
  /// Waits for the transfers submitted on it, then releases it (kvio_executor_close).
  ~Executor() { close(); }
  /// As the destructor, now: waits for the submitted transfers, then releases the executor.
  void close() {
    if (handle_ != 0) kvio_executor_close(handle_);
    handle_ = 0;
  }
  uint64_t handle() const { return handle_; }
  /// The cudaStream_t a CUDA executor orders its work on (kvio_executor_cuda_stream).
  uint64_t cudaStream() const {
    uint64_t stream = 0;
    check(kvio_executor_cuda_stream(handle_, &stream));
    return stream;
  }
  /// The aclrtStream a kernel_ascend executor orders its work on.
  uint64_t ascendStream() const {
    uint64_t stream = 0;
    check(kvio_executor_ascend_stream(handle_, &stream));
    return stream;
  }
  /// The copy kernel's launch shape from now on (kernel, auto's kernel, staged's gather/scatter;
  /// kvio_executor_set_launch).
  void setLaunch(int32_t ctaBudget, int32_t warpsPerCta) {
    check(kvio_executor_set_launch(handle_, ctaBudget, warpsPerCta));
  }
  int32_t threads() const {
    int32_t threads = 0;
    check(kvio_executor_threads(handle_, &threads));
    return threads;
  }
  /// An 'auto' executor's calibration, in the calibration file format.
  std::string autoCalibration() const {
    const char* text = kvio_executor_auto_calibration(handle_);
    if (text == nullptr) throw Error(kvio_last_status(), kvio_last_error());
    return text;
  }
  /// Replaces an 'auto' executor's calibration (the calibration file format).
  void setAutoCalibration(const std::string& text) {
    check(kvio_executor_set_auto_calibration(handle_, text.c_str()));
  }

 private:
  explicit Executor(uint64_t handle) : handle_(handle) {}
  uint64_t handle_ = 0;
};

/// The general transfer: for each index pair and each layer of the map, every component's
/// row moves from src to dst. Any layout to any layout. overlapsCompute: the transfer runs
/// beside compute on the device (KVIO_SUBMIT_OVERLAPS_COMPUTE; read by the 'auto' backend).
/// Empty index lists (an empty batch) give an already completed Transfer of 0 bytes after every
/// other check (kvio_check_transfer), as in the Java API; the C ABI's submit refuses them.
inline Transfer transfer(const Executor& executor, const Pool& src, const Pool& dst,
                         Indices srcIndices, Indices dstIndices, LayerMap layers,
                         bool overlapsCompute = false) {
  if (srcIndices.size != dstIndices.size) {
    throw Error(KVIO_STATUS_INVALID_ARGUMENT, "srcIndices has " + std::to_string(srcIndices.size) +
                                                  " entries but dstIndices has " +
                                                  std::to_string(dstIndices.size));
  }
  const kvio_transfer_desc desc{src.handle(),    dst.handle(),    srcIndices.data, dstIndices.data,
                                srcIndices.size, layers.srcStart, layers.dstStart, layers.count};
  const uint32_t flags = overlapsCompute ? KVIO_SUBMIT_OVERLAPS_COMPUTE : 0u;
  if (srcIndices.size == 0) {
    check(kvio_check_transfer(executor.handle(), &desc, flags));
    return Transfer::completedEmpty();
  }
  uint64_t handle = 0;
  check(kvio_submit_flags(executor.handle(), &desc, flags, &handle));
  return Transfer(handle);
}

/// One layer: src layer srcLayer to dst layer dstLayer (a per-layer load or backup; a load
/// during the forward pass is the case for overlapsCompute).
inline Transfer transferPerLayer(const Executor& executor, const Pool& src, const Pool& dst,
                                 Indices srcIndices, Indices dstIndices, int64_t srcLayer,
                                 int64_t dstLayer, bool overlapsCompute = false) {
  return transfer(executor, src, dst, srcIndices, dstIndices, LayerMap{srcLayer, dstLayer, 1},
                  overlapsCompute);
}

/// Every layer of dst, from src layers [srcLayerStart, srcLayerStart + dst layers): an
/// all-layer backup; with srcLayerStart > 0 the backup of a layer-sharded pool.
inline Transfer transferAllLayers(const Executor& executor, const Pool& src, const Pool& dst,
                                  Indices srcIndices, Indices dstIndices, int64_t srcLayerStart = 0,
                                  bool overlapsCompute = false) {
  return transfer(executor, src, dst, srcIndices, dstIndices,
                  LayerMap{srcLayerStart, 0, dst.spec().numLayers}, overlapsCompute);
}

/// Expands page ids into token slots: page p becomes p*pageSize ... p*pageSize + pageSize-1.
inline std::vector<int64_t> pageSlots(const std::vector<int64_t>& pages, int64_t pageSize) {
  std::vector<int64_t> slots;
  slots.reserve(pages.size() * static_cast<size_t>(pageSize));
  for (int64_t p : pages)
    for (int64_t s = 0; s < pageSize; ++s) slots.push_back(p * pageSize + s);
  return slots;
}

/// Page-granular copy, as the reference's "direct" ops: whole pages srcPages[i] -> dstPages[i]
/// (both pools must have the same page size).
inline Transfer transferDirect(const Executor& executor, const Pool& src, const Pool& dst,
                               const std::vector<int64_t>& srcPages,
                               const std::vector<int64_t>& dstPages, LayerMap layers) {
  if (src.spec().pageSize != dst.spec().pageSize) {
    throw Error(KVIO_STATUS_INVALID_ARGUMENT,
                "page-granular transfers need equal page sizes, got " +
                    std::to_string(src.spec().pageSize) + " and " +
                    std::to_string(dst.spec().pageSize));
  }
  const std::vector<int64_t> s = pageSlots(srcPages, src.spec().pageSize);
  const std::vector<int64_t> d = pageSlots(dstPages, dst.spec().pageSize);
  return transfer(executor, src, dst, s, d, layers);
}

/// The Ascend "dim exchange": layer-first paged device pool <-> page_first_direct host pool,
/// whole pages, a window of layers [layerStart, layerStart + layerCount) on both sides
/// (layerCount 1 is a true layer-by-layer load).
inline Transfer transferDimExchange(const Executor& executor, const Pool& src, const Pool& dst,
                                    const std::vector<int64_t>& srcPages,
                                    const std::vector<int64_t>& dstPages, int64_t layerStart,
                                    int64_t layerCount) {
  return transferDirect(executor, src, dst, srcPages, dstPages,
                        LayerMap{layerStart, layerStart, layerCount});
}

}  // namespace kvio

#undef KVIO_NODISCARD

#endif  // KVIO_KVIO_HPP_
