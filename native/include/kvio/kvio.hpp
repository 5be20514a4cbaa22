// kvio C++ API: header-only RAII classes over the C ABI (kvio.h), for C++ serving stacks.
// Errors become kvio::Error exceptions carrying the status and the library's message, so code
// built without exceptions (-fno-exceptions) uses the C ABI (kvio.h) instead: it reports every
// error as a kvio_status and kvio_last_error().
//
//   kvio::Executor cpu(kvio::IoBackend::Cpu);
//   kvio::Pool device = kvio::Pool::allocate(deviceSpec);
//   kvio::Pool host = kvio::Pool::allocate(hostSpec);
//   kvio::transferAllLayers(cpu, device, host, deviceSlots, hostSlots).wait();   // backup
//   kvio::transferPerLayer(cpu, host, device, hostSlots, deviceSlots, 0, 0).wait(); // load
//
// Every named operation is the one general transfer (any layout to any layout, with a layer
// map) with its own index and layer conventions. Per transfer: TransferOptions (the overlap mark,
// queue-only, the copy kernel's launch shape, any of them) and, in place of host indices,
// DeviceIndices (slot indices already in GPU memory). Before a pool is configured: checkSupport,
// backendAvailable, cudaDeviceCount and ascendDeviceCount say whether it can work here and, if not,
// why, without throwing. kvio::check(status) throws the status of a C call just made (code that
// calls kvio.h beside this header) with that call's message. C++14 or later; from C++17 a
// Transfer left unused is a warning ([[nodiscard]]: a transfer dropped unawaited reports no
// failure).
//
// Threads: one Executor or Pool may be used by several threads at once (concurrent transfers
// through one executor, between the same pools, are fine; the C ABI orders them). Closing an
// object (close(), closeAndWait(), destruction, assignment) while another thread uses it is a
// data race on the object: the caller orders the close after every other use. The same holds
// for a Transfer: wait or query it from any thread, destroy it after those calls return.
#ifndef KVIO_KVIO_HPP_
#define KVIO_KVIO_HPP_

#if __cplusplus >= 201703L || (defined(_MSVC_LANG) && _MSVC_LANG >= 201703L)
#define KVIO_NODISCARD [[nodiscard]]
#else
#define KVIO_NODISCARD
#endif

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kvio/kvio.h"

namespace kvio {

/// A failed kvio call: what() is "STATUS_NAME: message", status() the C status, message() the
/// message alone (kvio_last_error's text, e.g. for a log line that prints the status apart).
class Error : public std::runtime_error {
 public:
  Error(kvio_status status, const std::string& message)
      : std::runtime_error(std::string(kvio_status_name(status)) + ": " + message),
        status_(status),
        prefix_(std::strlen(kvio_status_name(status)) + 2) {}
  kvio_status status() const { return status_; }
  const char* message() const noexcept { return what() + prefix_; }

 private:
  kvio_status status_;
  size_t prefix_;  // "STATUS_NAME: " in what()
};

/// Throws Error for a status other than KVIO_STATUS_OK, with this thread's kvio_last_error():
/// for code that calls the C ABI beside kvio.hpp, as kvio.hpp itself does. Give it the status of
/// the C call just made on this thread, before any other kvio call: kvio_last_error() is the
/// message of this thread's latest failed call and is not cleared by a call that succeeds, so a
/// status kept from earlier (or made up) would be thrown with another call's message.
inline void check(kvio_status status) {
  if (status != KVIO_STATUS_OK) throw Error(status, kvio_last_error());
}

namespace detail {
/// `text` as the C string kvio's C entry points take; INVALID_ARGUMENT when it holds a NUL byte,
/// which would end it early (what follows would be silently ignored).
inline const char* cString(const std::string& text, const char* what) {
  const size_t nul = text.find('\0');
  if (nul != std::string::npos) {
    throw Error(KVIO_STATUS_INVALID_ARGUMENT, std::string(what) + " holds a NUL byte at " +
                                                  std::to_string(nul) + " of its " +
                                                  std::to_string(text.size()) + " bytes");
  }
  return text.c_str();
}

/// A wait's timeout in kvio's nanoseconds: 0 (only checks) for zero or a negative one (a deadline
/// already passed); -1 (as long as it takes) for one beyond what int64 nanoseconds hold, such as
/// duration::max() of any unit; else at least 1.
template <class Rep, class Period>
int64_t timeoutNs(std::chrono::duration<Rep, Period> timeout) {
  if (timeout <= std::chrono::duration<Rep, Period>::zero()) return 0;
  const long double ns = std::chrono::duration<long double, std::nano>(timeout).count();
  if (ns >= static_cast<long double>(std::numeric_limits<int64_t>::max())) return -1;
  const int64_t whole = static_cast<int64_t>(ns);
  return whole < 1 ? 1 : whole;
}
}  // namespace detail

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
/// Where a pool's memory lies (kvio.h's KVIO_MEMORY_*): MemoryKind::CudaDevice is
/// KVIO_MEMORY_CUDA_DEVICE. A scoped type, so that a kind and a device ordinal cannot trade places.
enum class MemoryKind : int32_t {
#define KVIO_DEF_MEMORY(id, cpp, value, name) cpp = KVIO_MEMORY_##id,
#include "kvio/kvio_enums.def"
};
// clang-format on

namespace detail {
template <class E>
E parse(int32_t table, const std::string& text, const char* what) {
  int32_t value = 0;
  check(kvio_parse_name(table, cString(text, what), &value));
  return static_cast<E>(value);
}
inline const char* nameOf(int32_t table, int32_t value) {
  const char* name = kvio_name(table, value);
  if (name == nullptr) throw Error(kvio_last_status(), kvio_last_error());
  return name;
}
}  // namespace detail

/// Parses the strings users type ("page_first_direct", "kernel_ascend", ...): INVALID_ARGUMENT,
/// listing the valid names and the nearest, for any other.
inline PoolKind parsePoolKind(const std::string& text) {
  return detail::parse<PoolKind>(KVIO_NAME_KIND, text, "the pool kind name");
}
inline Layout parseLayout(const std::string& text) {
  return detail::parse<Layout>(KVIO_NAME_LAYOUT, text, "the layout name");
}
inline IoBackend parseIoBackend(const std::string& text) {
  return detail::parse<IoBackend>(KVIO_NAME_BACKEND, text, "the io backend name");
}
inline Granularity parseGranularity(const std::string& text) {
  return detail::parse<Granularity>(KVIO_NAME_GRANULARITY, text, "the granularity name");
}
inline MemoryKind parseMemoryKind(const std::string& text) {
  return detail::parse<MemoryKind>(KVIO_NAME_MEMORY, text, "the memory kind name");
}

/// The string users type for a value (kvio_name): name(Layout::PageFirst) is "page_first".
/// INVALID_ARGUMENT for a value outside the enumeration (a cast from a bad int).
inline const char* name(PoolKind v) {
  return detail::nameOf(KVIO_NAME_KIND, static_cast<int32_t>(v));
}
inline const char* name(Layout v) {
  return detail::nameOf(KVIO_NAME_LAYOUT, static_cast<int32_t>(v));
}
inline const char* name(IoBackend v) {
  return detail::nameOf(KVIO_NAME_BACKEND, static_cast<int32_t>(v));
}
inline const char* name(Granularity v) {
  return detail::nameOf(KVIO_NAME_GRANULARITY, static_cast<int32_t>(v));
}
inline const char* name(MemoryKind v) {
  return detail::nameOf(KVIO_NAME_MEMORY, static_cast<int32_t>(v));
}

/// The version of the libkvio loaded at run time (kvio_version); KVIO_VERSION_STRING is that of
/// the headers compiled against.
inline std::string version() {
  return kvio_version();
}

/// An answer of kvio's support rules that does not throw: ok(), or the status and kvio's message
/// saying what is wrong and what is valid instead (kvio_last_error()). require() throws it.
struct Support {
  kvio_status status = KVIO_STATUS_OK;
  std::string reason;  // empty when ok()

  bool ok() const { return status == KVIO_STATUS_OK; }
  explicit operator bool() const { return ok(); }
  /// Throws kvio::Error(status, reason) unless ok().
  void require() const {
    if (!ok()) throw Error(status, reason);
  }
  /// The answer of a C entry point that just returned `status` (its message read at once).
  static Support of(kvio_status status) {
    Support support;
    support.status = status;
    if (status != KVIO_STATUS_OK) support.reason = kvio_last_error();
    return support;
  }
};

/// A pool configuration to check against the support rules (kvio_support_query): a host pool of
/// `layout` holding hostNumLayers layers, from device layer deviceLayerStart of a device pool of
/// deviceNumLayers, moved by ioBackend at `granularity`.
struct SupportQuery {
  PoolKind kind = PoolKind::Mha;
  Layout layout = Layout::LayerFirst;  // the host pool's
  IoBackend ioBackend = IoBackend::Cpu;
  Granularity granularity = Granularity::PerLayer;
  int64_t headNum = 1;
  int64_t headBytes = 1;
  int64_t pageSize = 1;
  int64_t hostNumLayers = 1;
  int64_t deviceNumLayers = 1;
  int64_t deviceLayerStart = 0;

  kvio_support_query toC() const {
    return kvio_support_query{static_cast<int32_t>(kind),
                              static_cast<int32_t>(layout),
                              static_cast<int32_t>(ioBackend),
                              static_cast<int32_t>(granularity),
                              headNum,
                              headBytes,
                              pageSize,
                              hostNumLayers,
                              deviceNumLayers,
                              deviceLayerStart};
  }
};

/// Whether the configuration works on this machine and build (kvio_check_support): not ok() with
/// UNAVAILABLE (backend absent, with the cause), UNSUPPORTED, INVALID_ARGUMENT or OUT_OF_RANGE and
/// the reason naming the field. What a pool's configuration asks at start-up, before any transfer.
inline Support checkSupport(const SupportQuery& query) {
  const kvio_support_query c = query.toC();
  return Support::of(kvio_check_support(&c));
}

/// Whether io backend `backend` can run here (kvio_backend_available): not ok() with UNAVAILABLE
/// and the cause (no CUDA build, driver or device; no CANN or NPU).
inline Support backendAvailable(IoBackend backend) {
  return Support::of(kvio_backend_available(static_cast<int32_t>(backend)));
}

/// A device count, or why there are none: count 0 and not ok() (UNAVAILABLE) without a build,
/// runtime, driver or device of that kind, the reason being the runtime's own message.
struct DeviceCount : Support {
  int32_t count = 0;
};

namespace detail {
/// What a kvio_*_device_count entry point answers, as a DeviceCount.
inline DeviceCount deviceCount(kvio_status (*query)(int32_t*)) {
  int32_t count = 0;
  DeviceCount answer;
  static_cast<Support&>(answer) = Support::of(query(&count));
  answer.count = answer.ok() ? count : 0;
  return answer;
}
}  // namespace detail

/// Number of CUDA devices (kvio_cuda_device_count), without throwing.
inline DeviceCount cudaDeviceCount() {
  return detail::deviceCount(kvio_cuda_device_count);
}

/// Number of Ascend NPUs (kvio_ascend_device_count), without throwing.
inline DeviceCount ascendDeviceCount() {
  return detail::deviceCount(kvio_ascend_device_count);
}

/// Turns the timestamps of transfers submitted from now on (Transfer::info()'s submit_ns,
/// start_ns, end_ns) on or off, process-wide (kvio_transfer_timing). Off by default: three clock
/// reads per transfer when on.
inline void setTransferTiming(bool enabled) {
  check(kvio_transfer_timing(enabled ? 1 : 0));
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

namespace detail {
/// An integral type a count may be given as: not bool (a flag is no count), at most 64 bits.
template <class Count>
struct IsCount : std::integral_constant<bool, std::is_integral<Count>::value &&
                                                  !std::is_same<Count, bool>::value &&
                                                  sizeof(Count) <= sizeof(int64_t)> {};

/// Whether `count` lies in Target's range, compared in 64 bits of the count's own sign.
template <class Target, class Count>
bool countFits(Count count, std::true_type /* signed */) {
  const int64_t value = static_cast<int64_t>(count);
  return value >= int64_t{std::numeric_limits<Target>::min()} &&
         value <= int64_t{std::numeric_limits<Target>::max()};
}
template <class Target, class Count>
bool countFits(Count count, std::false_type /* unsigned */) {
  return static_cast<uint64_t>(count) <= static_cast<uint64_t>(std::numeric_limits<Target>::max());
}

/// `count` as the C ABI's count type Target (int64_t, int32_t): INVALID_ARGUMENT, naming `what`,
/// when Target cannot hold it (a size_t above INT64_MAX, which a cast would make negative, or
/// above INT32_MAX for an int32 count). A negative count that fits is passed on: the C ABI
/// refuses it with its own message.
template <class Target, class Count>
Target checkedCount(Count count, const char* what) {
  static_assert(IsCount<Count>::value && std::is_signed<Target>::value, "an integral count");
  if (!countFits<Target>(count, std::is_signed<Count>())) {
    throw Error(KVIO_STATUS_INVALID_ARGUMENT,
                std::string(what) + " is " + std::to_string(count) + ", which the C ABI's int" +
                    std::to_string(std::numeric_limits<Target>::digits + 1) +
                    "_t count cannot hold");
  }
  return static_cast<Target>(count);
}
}  // namespace detail

/// Int64 token indices: a view of a vector or of memory the caller owns (read during the
/// submit only), or, from a braced list ({4, 5, 6}) or a vector given as an rvalue (the result
/// of pageSlots), a copy the Indices keeps. data() and size() say what a submit reads; they
/// change only by assigning another Indices.
class Indices {
 public:
  /// A view of `count` indices at `indices`, the count of any integral type (int64_t, a
  /// vector's size_t, int): INVALID_ARGUMENT for one int64 cannot hold (a size_t above
  /// INT64_MAX). A braced {pointer, count} takes this form too; a braced list of numbers such
  /// as {0, 1} stays a list of indices (below), even with a 0 that is a null pointer constant.
  template <class Count, typename std::enable_if<detail::IsCount<Count>::value, int>::type = 0>
  Indices(const int64_t* indices, Count count)
      : data_(indices), size_(detail::checkedCount<int64_t>(count, "the index count")) {}
  /// A view of `v`: the vector must outlive every use of this Indices (and not be resized).
  Indices(const std::vector<int64_t>& v)  // NOLINT
      : data_(v.data()), size_(static_cast<int64_t>(v.size())) {}
  /// Takes the vector: `kvio::Indices slots = kvio::pageSlots({1}, 4);` keeps the slots (a view
  /// would point into the temporary, freed at the end of the statement).
  Indices(std::vector<int64_t>&& v)  // NOLINT
      : Indices(std::make_shared<const std::vector<int64_t>>(std::move(v))) {}
  /// A const rvalue (a function returning `const std::vector`) cannot be taken: it is copied.
  Indices(const std::vector<int64_t>&& v)  // NOLINT
      : Indices(std::make_shared<const std::vector<int64_t>>(v)) {}
  /// A braced list is copied: without this, {0, 1} would bind to (pointer, count) (0 is a null
  /// pointer constant) and name no index at all.
  Indices(std::initializer_list<int64_t> list)  // NOLINT
      : Indices(std::make_shared<const std::vector<int64_t>>(list)) {}
  // Copies share the owned copy; a move is a copy (a moved-from Indices keeps what it points at
  // alive).
  Indices(const Indices&) = default;
  Indices& operator=(const Indices&) = default;

  /// The first index (null or dangling for none), and how many there are.
  const int64_t* data() const { return data_; }
  int64_t size() const { return size_; }

 private:
  explicit Indices(std::shared_ptr<const std::vector<int64_t>> owned)
      : data_(owned->data()),
        size_(static_cast<int64_t>(owned->size())),
        owned_(std::move(owned)) {}
  const int64_t* data_ = nullptr;
  int64_t size_ = 0;
  std::shared_ptr<const std::vector<int64_t>> owned_;  // a braced list's or a vector's; or null
};

/// Which layers move: src layers [srcStart, srcStart + count) to dst [dstStart, ...).
struct LayerMap {
  int64_t srcStart = 0;
  int64_t dstStart = 0;
  int64_t count = 1;
};

/// Int64 token indices already in memory of the executor's CUDA device, e.g. a serving engine's
/// slot tensor (kvio_submit_device_indices). A view, never a copy: the copy kernel reads the arrays
/// while the transfer runs, so they must stay valid and unchanged until the transfer completes
/// (not only during the submit, as for Indices). Made only by DeviceIndices::view(pointer, count):
/// no Indices, vector, braced list or (pointer, count) pair becomes one, and it becomes no
/// Indices, so a call site says which memory its indices are in.
class DeviceIndices {
 public:
  /// `count` int64 indices at `deviceData`, memory of the executor's device (8-byte aligned).
  static DeviceIndices view(const int64_t* deviceData, int64_t count) {
    return DeviceIndices(Tag(), deviceData, count);
  }
  const int64_t* data() const { return data_; }
  int64_t size() const { return size_; }

 private:
  struct Tag {};
  // Three parameters, one of them private: a braced pair such as {0, 1} (0 is a null pointer
  // constant) can never be taken for one.
  DeviceIndices(Tag, const int64_t* deviceData, int64_t count) : data_(deviceData), size_(count) {}
  const int64_t* data_;
  int64_t size_;
};

/// What one transfer asks beyond its indices and layers; the default asks nothing. Any
/// combination holds (kvio_submit_with), with host indices and with DeviceIndices.
struct TransferOptions {
  /// The transfer runs beside compute on the device, e.g. a layer's load during the forward pass
  /// (KVIO_SUBMIT_OVERLAPS_COMPUTE): 'auto' then prefers the copy engine from smaller rows; other
  /// backends ignore it.
  bool overlapsCompute = false;
  /// The copy kernel's launch shape for this transfer only (kvio_submit_with): at most ctaBudget
  /// thread blocks of warpsPerCta warps; 0 or less: the executor's setting. Read by the kernel
  /// backend (and by 'auto' when it gives the transfer to its kernel); the others ignore it, cpu
  /// included. INVALID_ARGUMENT above 65535 CTAs or 32 warps on every backend, an empty transfer
  /// included (it launches nothing, but kvio_check_transfer_with checks the shape).
  int32_t ctaBudget = 0;
  int32_t warpsPerCta = 0;
  /// The submit only queues the transfer (KVIO_SUBMIT_QUEUE_ONLY): the calling thread copies
  /// nothing, where the cpu backend (and 'auto' running cpu) would otherwise copy a small
  /// transfer to an idle executor itself. The device backends ignore it.
  bool queueOnly = false;

  /// Whether a launch shape is given (a budget or a warp count above 0).
  bool hasLaunch() const { return ctaBudget > 0 || warpsPerCta > 0; }
  /// These options as kvio_submit_with takes them, with the index arrays in `indicesMemory`
  /// (KVIO_INDICES_HOST or KVIO_INDICES_DEVICE).
  kvio_submit_options toC(int32_t indicesMemory = KVIO_INDICES_HOST) const {
    kvio_submit_options c = KVIO_SUBMIT_OPTIONS_INIT;
    c.flags = (overlapsCompute ? KVIO_SUBMIT_OVERLAPS_COMPUTE : 0u) |
              (queueOnly ? KVIO_SUBMIT_QUEUE_ONLY : 0u);
    c.cta_budget = ctaBudget;
    c.warps_per_cta = warpsPerCta;
    c.indices_memory = indicesMemory;
    return c;
  }
};

/// A pool: kvio's memory (allocate) or the caller's (the wrap forms). Destroying (or assigning
/// over) a pool over caller memory closes it and waits until kvio no longer uses that memory
/// (kvio_pool_close_wait, as closeAndWait()): in RAII order, `{ std::vector<uint8_t> buf;
/// Pool p = Pool::wrap(spec, buf.data(), ...); Transfer t = transfer(.., p, ..); }` frees buf
/// only after the transfer's last copy, awaited or not. A pool of kvio's memory is closed
/// without waiting (its memory is freed when its last transfer completes).
/// After close() the pool keeps its handle, so later use reports KVIO_STATUS_CLOSED; a
/// moved-from or default-constructed pool has handle 0 (INVALID_ARGUMENT).
class Pool {
 public:
  /// No pool (handle 0), to be assigned one later (an engine member set up after construction);
  /// its calls throw INVALID_ARGUMENT, close() and the destructor do nothing.
  Pool() noexcept = default;
  /// The device a pool of `memoryKind` is on when no device is given: -1 (none: the host) for
  /// MemoryKind::Host, device 0 for every other kind (device memory, and pinned host memory,
  /// which belongs to a device too), as Java's DeviceKvPool.allocate(spec, backend) and
  /// kvio_executor_create mean device 0.
  static int32_t defaultDevice(MemoryKind memoryKind) {
    return memoryKind == MemoryKind::Host ? -1 : 0;
  }
  /// Memory allocated by kvio: host memory by default (2 MiB aligned, huge pages advised,
  /// zeroed), or memory of another MemoryKind on defaultDevice(memoryKind) (device 0).
  static Pool allocate(const PoolSpec& spec, MemoryKind memoryKind = MemoryKind::Host) {
    return allocate(spec, memoryKind, defaultDevice(memoryKind));
  }
  /// Memory of `memoryKind` on `device`, taken as given (kvio.h): host memory ignores it, the
  /// other kinds need a device ordinal (-1 is refused with INVALID_ARGUMENT). The same holds
  /// for the wrap forms below: without a device, defaultDevice(memoryKind); with one, that one.
  static Pool allocate(const PoolSpec& spec, MemoryKind memoryKind, int32_t device) {
    const kvio_pool_spec c = spec.toC();
    uint64_t handle = 0;
    check(kvio_pool_allocate_memory(&c, static_cast<int32_t>(memoryKind), device, &handle));
    return Pool(handle, spec, false);
  }
  /// Caller-owned memory: all components one after the other.
  static Pool wrap(const PoolSpec& spec, void* data, uint64_t bytes,
                   MemoryKind memoryKind = MemoryKind::Host) {
    return wrap(spec, data, bytes, memoryKind, defaultDevice(memoryKind));
  }
  static Pool wrap(const PoolSpec& spec, void* data, uint64_t bytes, MemoryKind memoryKind,
                   int32_t device) {
    const kvio_pool_spec c = spec.toC();
    uint64_t handle = 0;
    check(kvio_pool_wrap_memory(&c, static_cast<int32_t>(memoryKind), device,
                                reinterpret_cast<uint64_t>(data), bytes, &handle));
    return Pool(handle, spec, true);
  }
  /// Caller-owned memory, one buffer per component (K and V tensors, Ascend 5-D buffers).
  static Pool wrapComponents(const PoolSpec& spec, const std::vector<void*>& components,
                             uint64_t bytesEach, MemoryKind memoryKind = MemoryKind::Host) {
    return wrapComponents(spec, components, bytesEach, memoryKind, defaultDevice(memoryKind));
  }
  static Pool wrapComponents(const PoolSpec& spec, const std::vector<void*>& components,
                             uint64_t bytesEach, MemoryKind memoryKind, int32_t device) {
    const std::vector<uint64_t> addresses = addressesOf(components);
    return wrapComponents(spec, addresses.data(), addresses.size(), bytesEach, memoryKind, device);
  }
  /// Caller-owned per-layer buffers (layer_first): table[c * numLayers + l].
  static Pool wrapLayerTable(const PoolSpec& spec, const std::vector<void*>& table,
                             uint64_t bytesEach, MemoryKind memoryKind = MemoryKind::Host) {
    return wrapLayerTable(spec, table, bytesEach, memoryKind, defaultDevice(memoryKind));
  }
  static Pool wrapLayerTable(const PoolSpec& spec, const std::vector<void*>& table,
                             uint64_t bytesEach, MemoryKind memoryKind, int32_t device) {
    const std::vector<uint64_t> addresses = addressesOf(table);
    return wrapLayerTable(spec, addresses.data(), addresses.size(), bytesEach, memoryKind, device);
  }
  /// wrapComponents over an engine's own table of `count` addresses (e.g. a uint64 tensor of
  /// per-component base pointers), read during this call only. INVALID_ARGUMENT for a count
  /// above INT32_MAX (the C ABI's num_components is an int32), before any address is read; the
  /// vector form above is this one.
  static Pool wrapComponents(const PoolSpec& spec, const uint64_t* addresses, size_t count,
                             uint64_t bytesEach, MemoryKind memoryKind = MemoryKind::Host) {
    return wrapComponents(spec, addresses, count, bytesEach, memoryKind, defaultDevice(memoryKind));
  }
  static Pool wrapComponents(const PoolSpec& spec, const uint64_t* addresses, size_t count,
                             uint64_t bytesEach, MemoryKind memoryKind, int32_t device) {
    const kvio_pool_spec c = spec.toC();
    const int32_t n = detail::checkedCount<int32_t>(count, "the component address count");
    uint64_t handle = 0;
    check(kvio_pool_wrap_components_memory(&c, static_cast<int32_t>(memoryKind), device, addresses,
                                           n, bytesEach, &handle));
    return Pool(handle, spec, true);
  }
  /// wrapLayerTable over an engine's own table of `count` addresses (its k_data_ptrs and
  /// v_data_ptrs one after the other: entry c * numLayers + l), read during this call only.
  /// INVALID_ARGUMENT for a count above INT64_MAX (the C ABI's num_entries is an int64).
  static Pool wrapLayerTable(const PoolSpec& spec, const uint64_t* table, size_t count,
                             uint64_t bytesEach, MemoryKind memoryKind = MemoryKind::Host) {
    return wrapLayerTable(spec, table, count, bytesEach, memoryKind, defaultDevice(memoryKind));
  }
  static Pool wrapLayerTable(const PoolSpec& spec, const uint64_t* table, size_t count,
                             uint64_t bytesEach, MemoryKind memoryKind, int32_t device) {
    const kvio_pool_spec c = spec.toC();
    const int64_t n = detail::checkedCount<int64_t>(count, "the layer table's entry count");
    uint64_t handle = 0;
    check(kvio_pool_wrap_layer_table_memory(&c, static_cast<int32_t>(memoryKind), device, table, n,
                                            bytesEach, &handle));
    return Pool(handle, spec, true);
  }

  Pool(Pool&& other) noexcept
      : handle_(std::exchange(other.handle_, 0)),
        closed_(std::exchange(other.closed_, false)),
        released_(std::exchange(other.released_, false)),
        callerMemory_(std::exchange(other.callerMemory_, false)),
        spec_(other.spec_) {}
  /// Releases this pool as the destructor does (a pool over caller memory: closed and waited
  /// for), then takes other's.
  Pool& operator=(Pool&& other) noexcept {
    if (this != &other) {
      release();
      handle_ = std::exchange(other.handle_, 0);
      closed_ = std::exchange(other.closed_, false);
      released_ = std::exchange(other.released_, false);
      callerMemory_ = std::exchange(other.callerMemory_, false);
      spec_ = other.spec_;
    }
    return *this;
  }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  /// Closes the pool; over caller memory (the wrap forms) also waits, as long as it takes, until
  /// every transfer submitted with it has completed and kvio's registration of the memory has
  /// ended, so the memory may be freed right after (like ~Executor, which waits for its
  /// transfers). A pool of kvio's memory is only closed: its memory goes with its last transfer.
  ~Pool() { release(); }

  /// Closes the handle (kvio_pool_close, docs/memory-lifetime.md), once. With no transfer of
  /// this pool still running, kvio's use of the memory ends before close() returns (wrapped
  /// memory may be freed right after); otherwise when the last of them completes: use
  /// closeAndWait() to know when (the destructor of a pool over caller memory waits for it).
  /// The pool keeps its handle: later use reports KVIO_STATUS_CLOSED.
  void close() {
    if (handle_ != 0 && !closed_) {
      kvio_pool_close(handle_);
      closed_ = true;
    }
  }
  /// Closes the handle if open, then waits until kvio no longer uses the pool's memory: every
  /// transfer submitted with it has completed, kvio's allocation is freed and its registration
  /// of wrapped memory has ended (kvio_pool_close_wait). True once wrapped memory may be freed;
  /// false when a transfer was still running after `timeout` (the pool stays closed; call again
  /// to wait more). A negative timeout (a deadline already passed) only checks, as zero does and
  /// as Transfer::waitFor and Java's closeAndWait(timeout, unit) do; closeAndWait() without one,
  /// or with one longer than int64 nanoseconds hold (duration::max()), waits as long as it takes.
  /// A moved-from pool answers true at once (nothing of it to wait for), as close() does nothing
  /// for it; its other calls throw INVALID_ARGUMENT.
  template <class Rep, class Period>
  bool closeAndWait(std::chrono::duration<Rep, Period> timeout) {
    return closeAndWaitNs(detail::timeoutNs(timeout));
  }
  /// closeAndWait as long as it takes: true, or throws for an error.
  bool closeAndWait() { return closeAndWaitNs(-1); }
  /// The handle; after close() still the closed handle (0 only for a moved-from or
  /// default-constructed pool).
  uint64_t handle() const { return handle_; }
  /// True while this object holds a handle it has not closed: false when default-constructed,
  /// moved from, or after close() or closeAndWait() (a handle closed through the C ABI behind
  /// its back still reads true; its calls report KVIO_STATUS_CLOSED).
  explicit operator bool() const noexcept { return handle_ != 0 && !closed_; }
  const PoolSpec& spec() const { return spec_; }
  /// Where the pool's memory lies (kvio_pool_memory): its kind and device ordinal (-1 for host
  /// memory).
  struct Memory {
    MemoryKind kind = MemoryKind::Host;
    int32_t device = -1;
  };
  Memory memory() const {
    int32_t kind = KVIO_MEMORY_HOST;
    Memory memory;
    check(kvio_pool_memory(handle_, &kind, &memory.device));
    memory.kind = static_cast<MemoryKind>(kind);
    return memory;
  }
  int64_t regions() const {
    int64_t count = 0;
    check(kvio_pool_region(handle_, 0, nullptr, nullptr, &count));
    return count;
  }
  /// The first byte of region `region` (host memory: the bytes themselves; device memory: an
  /// address of the device). Writable through a non-const Pool only, as copyFrom and prefault.
  uint8_t* data(int64_t region = 0) { return reinterpret_cast<uint8_t*>(address(region)); }
  const uint8_t* data(int64_t region = 0) const {
    return reinterpret_cast<const uint8_t*>(address(region));
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
  /// Backs every page of pageable host memory now, keeping its bytes, so that the first
  /// transfers do not pay the page faults; pinned and device memory: nothing to do
  /// (kvio_pool_prefault). Call before the pool's transfers.
  void prefault() { check(kvio_pool_prefault(handle_)); }
  /// Writes `bytes` of host memory `in` into region `region` at byte `offset` (as copyTo).
  void copyFrom(int64_t region, uint64_t offset, const void* in, uint64_t bytes) {
    check(kvio_pool_copy(handle_, region, offset, reinterpret_cast<uint64_t>(in), bytes,
                         KVIO_COPY_HOST_TO_POOL));
  }

 private:
  Pool(uint64_t handle, const PoolSpec& spec, bool callerMemory)
      : handle_(handle), callerMemory_(callerMemory), spec_(spec) {}
  uint64_t address(int64_t region) const {
    uint64_t address = 0;
    check(kvio_pool_region(handle_, region, &address, nullptr, nullptr));
    return address;
  }
  // closeAndWait with kvio_pool_close_wait's timeout (< 0: as long as it takes).
  bool closeAndWaitNs(int64_t timeoutNs) {
    close();
    if (handle_ == 0 || released_) return true;
    const kvio_status status = kvio_pool_close_wait(handle_, timeoutNs);
    if (status == KVIO_STATUS_TIMEOUT) return false;
    check(status);  // only then released: an error is no answer (the destructor waits again)
    released_ = true;
    return true;
  }
  // The destructor's work (and move-assignment's, for the pool it replaces); never throws.
  void release() noexcept {
    close();
    if (callerMemory_ && handle_ != 0 && !released_) {
      (void)kvio_pool_close_wait(handle_, -1);
      released_ = true;
    }
  }
  // Caller buffers given as pointers, as the uint64 addresses the C entry points take.
  static std::vector<uint64_t> addressesOf(const std::vector<void*>& pointers) {
    std::vector<uint64_t> addresses;
    addresses.reserve(pointers.size());
    for (void* p : pointers) addresses.push_back(reinterpret_cast<uint64_t>(p));
    return addresses;
  }
  uint64_t handle_ = 0;
  bool closed_ = false;        // kvio_pool_close ran (the handle is kept: later use is CLOSED)
  bool released_ = false;      // kvio_pool_close_wait answered: kvio no longer uses the memory
  bool callerMemory_ = false;  // a wrap form: release() waits
  PoolSpec spec_;
};

class Executor;
class Transfer;
// The two forms of transfer() that submit (host and device indices, with TransferOptions; every
// other transfer function calls one of them), declared inline here because Transfer befriends
// them: they are the only ones that make a Transfer of a handle (defined below).
inline Transfer transfer(const Executor& executor, const Pool& src, const Pool& dst,
                         Indices srcIndices, Indices dstIndices, LayerMap layers,
                         const TransferOptions& options);
inline Transfer transfer(const Executor& executor, const Pool& src, const Pool& dst,
                         DeviceIndices srcIndices, DeviceIndices dstIndices, LayerMap layers,
                         const TransferOptions& options);

/// Completion handle of one submitted transfer. Destroying it does not cancel the transfer, but
/// a transfer dropped unawaited reports no failure: hence [[nodiscard]] (C++17). Made by the
/// transfer functions, or from a C handle with Transfer::adopt (it closes that handle when
/// destroyed).
class KVIO_NODISCARD Transfer {
 public:
  /// No transfer (handle 0), to be assigned one later; wait() and the other calls throw
  /// INVALID_ARGUMENT (it stands for no work: unlike completedEmpty(), it is not complete).
  Transfer() noexcept = default;
  /// Takes a transfer handle a kvio_submit* call of the C ABI returned (code that submits in C
  /// and waits in C++): the Transfer waits on it and closes it when destroyed. Give each handle
  /// to one Transfer only, and do not close it yourself.
  static Transfer adopt(uint64_t handle) { return Transfer(handle); }
  /// A transfer of no index pairs (empty index lists), checked and complete: it moved 0 bytes,
  /// and has no handle, no event (cudaEvent() 0: test movesNothing() before waiting on it) and
  /// no info. It is complete at once, not ordered after earlier transfers on its executor: it
  /// does not stand for them (wait on a transfer that moved bytes for that).
  static Transfer completedEmpty() {
    Transfer t(0);
    t.movesNothing_ = true;
    return t;
  }
  Transfer(Transfer&& other) noexcept
      : handle_(std::exchange(other.handle_, 0)),
        movesNothing_(std::exchange(other.movesNothing_, false)) {}
  Transfer& operator=(Transfer&& other) noexcept {
    if (this != &other) {
      release();
      handle_ = std::exchange(other.handle_, 0);
      movesNothing_ = std::exchange(other.movesNothing_, false);
    }
    return *this;
  }
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;
  ~Transfer() { release(); }

  void wait() const {
    if (!movesNothing_) check(kvio_transfer_wait(handle_, -1));
  }
  /// Waits at most `timeout`: false on timeout; throws if the transfer failed. A negative
  /// timeout (a deadline already passed: waitFor(deadline - now())) only checks, as zero does;
  /// wait(), or a timeout longer than int64 nanoseconds hold (duration::max()), waits as long as
  /// it takes.
  template <class Rep, class Period>
  bool waitFor(std::chrono::duration<Rep, Period> timeout) const {
    if (movesNothing_) return true;
    const kvio_status status = kvio_transfer_wait(handle_, detail::timeoutNs(timeout));
    if (status == KVIO_STATUS_TIMEOUT) return false;
    check(status);
    return true;
  }
  bool done() const {
    if (movesNothing_) return true;
    const int32_t done = kvio_transfer_is_done(handle_);
    if (done < 0) check(-done);
    return done == 1;
  }
  uint64_t bytes() const {
    uint64_t bytes = 0;
    if (!movesNothing_) check(kvio_transfer_bytes(handle_, &bytes));
    return bytes;
  }
  /// What the transfer is and its times (kvio_transfer_get_info, kvio_transfer_timing).
  /// INVALID_ARGUMENT for a transfer that movesNothing(), which kvio never saw.
  kvio_transfer_info info() const {
    kvio_transfer_info info{};
    check(kvio_transfer_get_info(handle_, &info));
    return info;
  }
  /// The cudaEvent_t recorded after the transfer's work on its executor's stream, for another
  /// stream to wait on (kvio_transfer_cuda_event); 0 for a transfer that movesNothing()
  /// (nothing to wait for). UNSUPPORTED for transfers of other backends. Valid only while this
  /// Transfer is alive: its destruction (or assignment over it) closes the handle, and the executor
  /// then reuses or destroys the event. Enqueue cudaStreamWaitEvent before that.
  uint64_t cudaEvent() const { return event(kvio_transfer_cuda_event); }
  /// The same for kernel_ascend transfers: an aclrtEvent (kvio_transfer_ascend_event), valid
  /// while this Transfer is alive.
  uint64_t ascendEvent() const { return event(kvio_transfer_ascend_event); }
  uint64_t handle() const { return handle_; }
  /// True for a completedEmpty() transfer only (empty index lists: complete, 0 bytes, no
  /// handle). False for one that moves bytes, and for no transfer at all (default-constructed
  /// or moved from, whose operator bool is false).
  bool movesNothing() const { return movesNothing_; }
  /// True when this object stands for a submitted transfer (a handle, or completedEmpty()):
  /// false when default-constructed or moved from.
  explicit operator bool() const noexcept { return handle_ != 0 || movesNothing_; }

 private:
  friend Transfer transfer(const Executor& executor, const Pool& src, const Pool& dst,
                           Indices srcIndices, Indices dstIndices, LayerMap layers,
                           const TransferOptions& options);
  friend Transfer transfer(const Executor& executor, const Pool& src, const Pool& dst,
                           DeviceIndices srcIndices, DeviceIndices dstIndices, LayerMap layers,
                           const TransferOptions& options);
  // Takes the handle a kvio_submit* just returned (0: none, for completedEmpty()).
  explicit Transfer(uint64_t handle) noexcept : handle_(handle) {}
  uint64_t event(kvio_status (*query)(uint64_t, uint64_t*)) const {
    uint64_t event = 0;
    if (!movesNothing_) check(query(handle_, &event));
    return event;
  }
  void release() {
    if (handle_ != 0) kvio_transfer_close(handle_);
    handle_ = 0;
  }
  uint64_t handle_ = 0;
  bool movesNothing_ = false;
};

/// The copy kernel's launch shape of a CUDA executor (Executor::cuda): at most ctaBudget thread
/// blocks of warpsPerCta warps; 0 (either): the backend's default for it.
struct LaunchShape {
  int32_t ctaBudget = 0;
  int32_t warpsPerCta = 0;
};

/// Runs transfers of one io backend in submission order (a stream).
class Executor {
 public:
  /// No executor (handle 0), to be assigned one later; its calls throw INVALID_ARGUMENT,
  /// close() and the destructor do nothing.
  Executor() noexcept = default;
  /// An executor of `backend` on device 0; `threads` as kvio_executor_create takes it (io threads
  /// of cpu, and of auto where it is cpu; ignored by the device backends; above 1024 throws
  /// INVALID_ARGUMENT). Executor::cuda and Executor::ascend choose a device and a stream.
  explicit Executor(IoBackend backend, int32_t threads = 0) {
    check(kvio_executor_create(static_cast<int32_t>(backend), threads, &handle_));
  }
  /// A CUDA executor (kernel, direct, staged, auto) on `device`, ordering its work on `stream`
  /// (a cudaStream_t the caller keeps alive until the executor is closed, as uint64_t:
  /// reinterpret_cast<uint64_t>(stream); 0: the legacy default stream; KVIO_CUDA_OWN_STREAM:
  /// kvio creates one), with the copy kernel's launch shape (kvio_executor_create_cuda). In that
  /// order: cuda(backend, device, stream, {ctaBudget, warpsPerCta}). The shape is a LaunchShape,
  /// not two more integers, so that cuda(backend, 0, 8, 16) (a budget of 8 CTAs of 16 warps,
  /// meant?) does not compile instead of taking 8 as the stream.
  static Executor cuda(IoBackend backend, int32_t device, uint64_t stream = KVIO_CUDA_OWN_STREAM,
                       LaunchShape launch = LaunchShape()) {
    uint64_t handle = 0;
    check(kvio_executor_create_cuda(static_cast<int32_t>(backend), device, stream, launch.ctaBudget,
                                    launch.warpsPerCta, &handle));
    return Executor(handle);
  }
  /// A kernel_ascend executor on NPU `device`, on `stream` (an aclrtStream; 0: the default
  /// stream; KVIO_ASCEND_OWN_STREAM: kvio creates one) (kvio_executor_create_ascend).
  static Executor ascend(int32_t device, uint64_t stream = KVIO_ASCEND_OWN_STREAM) {
    uint64_t handle = 0;
    check(kvio_executor_create_ascend(device, stream, &handle));
    return Executor(handle);
  }
  /// An executor of `backend` (KernelAscend, or Auto on a machine with NPUs and no usable CUDA
  /// GPU) on NPU `device`, on `stream` (an aclrtStream; 0: the default stream;
  /// KVIO_ASCEND_OWN_STREAM: kvio creates one) (kvio_executor_create_on_npu).
  static Executor npu(IoBackend backend, int32_t device, uint64_t stream = KVIO_ASCEND_OWN_STREAM) {
    uint64_t handle = 0;
    check(kvio_executor_create_on_npu(static_cast<int32_t>(backend), device, stream, &handle));
    return Executor(handle);
  }
  Executor(Executor&& other) noexcept
      : handle_(std::exchange(other.handle_, 0)), closed_(std::exchange(other.closed_, false)) {}
  Executor& operator=(Executor&& other) noexcept {
    if (this != &other) {
      close();
      handle_ = std::exchange(other.handle_, 0);
      closed_ = std::exchange(other.closed_, false);
    }
    return *this;
  }
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;
  /// Waits for the transfers submitted on it, then releases it (kvio_executor_close).
  ~Executor() { close(); }
  /// As the destructor, now (once): waits for the submitted transfers, then releases the
  /// executor. It keeps its handle: later use reports KVIO_STATUS_CLOSED.
  void close() {
    if (handle_ != 0 && !closed_) {
      kvio_executor_close(handle_);
      closed_ = true;
    }
  }
  /// The handle; after close() still the closed handle (0 only for a moved-from or
  /// default-constructed executor).
  uint64_t handle() const { return handle_; }
  /// True while this object holds a handle it has not closed: false when default-constructed,
  /// moved from, or after close().
  explicit operator bool() const noexcept { return handle_ != 0 && !closed_; }
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
  /// The io backend this executor was created for (Auto stays Auto; kvio_executor_backend).
  IoBackend backend() const {
    int32_t backend = 0;
    check(kvio_executor_backend(handle_, &backend));
    return static_cast<IoBackend>(backend);
  }
  /// An 'auto' executor's calibration, in the calibration file format.
  std::string autoCalibration() const {
    const char* text = kvio_executor_auto_calibration(handle_);
    if (text == nullptr) throw Error(kvio_last_status(), kvio_last_error());
    return text;
  }
  /// Replaces an 'auto' executor's calibration (the calibration file format).
  void setAutoCalibration(const std::string& text) {
    check(kvio_executor_set_auto_calibration(handle_, detail::cString(text, "the calibration")));
  }

 private:
  explicit Executor(uint64_t handle) : handle_(handle) {}
  uint64_t handle_ = 0;
  bool closed_ = false;  // kvio_executor_close ran (the handle is kept: later use is CLOSED)
};

namespace detail {
template <class... T>
struct AnyBool : std::false_type {};
template <class First, class... Rest>
struct AnyBool<First, Rest...>
    : std::integral_constant<bool, std::is_same<typename std::decay<First>::type, bool>::value ||
                                       AnyBool<Rest...>::value> {};
/// True for an argument that is neither a bool nor TransferOptions where overlapsCompute or the
/// options go (a number or a pointer there would convert to bool silently).
template <class T>
struct NotAMark
    : std::integral_constant<bool, !std::is_same<typename std::decay<T>::type, bool>::value &&
                                       !std::is_convertible<T, const TransferOptions&>::value> {};
}  // namespace detail

/// The general transfer: for each index pair and each layer of the map, every component's
/// row moves from src to dst. Any layout to any layout. `options`: the overlap mark, queue-only
/// and the copy kernel's launch shape for this transfer (TransferOptions, kvio_submit_with).
/// Empty index lists (an empty batch) give an already completed Transfer of 0 bytes after every
/// other check (kvio_check_transfer_with), as in the Java API; the C ABI's submit refuses them.
inline Transfer transfer(const Executor& executor, const Pool& src, const Pool& dst,
                         Indices srcIndices, Indices dstIndices, LayerMap layers,
                         const TransferOptions& options) {
  if (srcIndices.size() != dstIndices.size()) {
    throw Error(KVIO_STATUS_INVALID_ARGUMENT,
                "srcIndices has " + std::to_string(srcIndices.size()) +
                    " entries but dstIndices has " + std::to_string(dstIndices.size()));
  }
  const kvio_transfer_desc desc{src.handle(),      dst.handle(),      srcIndices.data(),
                                dstIndices.data(), srcIndices.size(), layers.srcStart,
                                layers.dstStart,   layers.count};
  const kvio_submit_options c = options.toC(KVIO_INDICES_HOST);
  if (srcIndices.size() == 0) {
    check(kvio_check_transfer_with(executor.handle(), &desc, &c));
    return Transfer::completedEmpty();
  }
  uint64_t handle = 0;
  check(kvio_submit_with(executor.handle(), &desc, &c, &handle));
  return Transfer(handle);
}

/// The general transfer with the overlap mark only (KVIO_SUBMIT_OVERLAPS_COMPUTE; read by the
/// 'auto' backend), as TransferOptions{overlapsCompute}.
inline Transfer transfer(const Executor& executor, const Pool& src, const Pool& dst,
                         Indices srcIndices, Indices dstIndices, LayerMap layers,
                         bool overlapsCompute = false) {
  TransferOptions options;
  options.overlapsCompute = overlapsCompute;
  return transfer(executor, src, dst, srcIndices, dstIndices, layers, options);
}

/// The general transfer with indices in memory of the executor's CUDA device
/// (kvio_submit_with, KVIO_INDICES_DEVICE): the kernel backend, and 'auto' on a GPU, which gives
/// the transfer to its kernel. Elsewhere (cpu, direct, staged, kernel_ascend, auto without a GPU)
/// UNSUPPORTED, before any byte moves. The host cannot check the indices: the kernel skips every
/// pair with an index outside its pool and the transfer completes with OUT_OF_RANGE naming the
/// first bad position (wait() throws it); duplicate destination slots are not detected (the rows
/// race). The arrays must stay valid and unchanged until the transfer completes. `options`: the
/// overlap mark and the launch shape, as for host indices. Empty lists give a completed Transfer
/// of 0 bytes after the checks that need no index, whether the backend takes device indices
/// included (kvio_check_transfer_with).
inline Transfer transfer(const Executor& executor, const Pool& src, const Pool& dst,
                         DeviceIndices srcIndices, DeviceIndices dstIndices, LayerMap layers,
                         const TransferOptions& options) {
  if (srcIndices.size() != dstIndices.size()) {
    throw Error(KVIO_STATUS_INVALID_ARGUMENT,
                "srcIndices has " + std::to_string(srcIndices.size()) +
                    " device entries but dstIndices has " + std::to_string(dstIndices.size()));
  }
  const kvio_transfer_desc desc{src.handle(),      dst.handle(),      srcIndices.data(),
                                dstIndices.data(), srcIndices.size(), layers.srcStart,
                                layers.dstStart,   layers.count};
  const kvio_submit_options c = options.toC(KVIO_INDICES_DEVICE);
  if (srcIndices.size() == 0) {
    check(kvio_check_transfer_with(executor.handle(), &desc, &c));
    return Transfer::completedEmpty();
  }
  uint64_t handle = 0;
  check(kvio_submit_with(executor.handle(), &desc, &c, &handle));
  return Transfer(handle);
}

/// The general transfer with indices in device memory and the overlap mark only.
inline Transfer transfer(const Executor& executor, const Pool& src, const Pool& dst,
                         DeviceIndices srcIndices, DeviceIndices dstIndices, LayerMap layers,
                         bool overlapsCompute = false) {
  TransferOptions options;
  options.overlapsCompute = overlapsCompute;
  return transfer(executor, src, dst, srcIndices, dstIndices, layers, options);
}

/// Where overlapsCompute or the options go, only a bool or TransferOptions: a number
/// (transfer(..., LayerMap{0, 0, 1}, 5)) or a pointer (&options) would be taken as true.
/// Refused when compiling.
template <class Mark, typename std::enable_if<detail::NotAMark<Mark>::value, int>::type = 0>
Transfer transfer(const Executor&, const Pool&, const Pool&, Indices, Indices, LayerMap,
                  Mark&&) = delete;
template <class Mark, typename std::enable_if<detail::NotAMark<Mark>::value, int>::type = 0>
Transfer transfer(const Executor&, const Pool&, const Pool&, DeviceIndices, DeviceIndices, LayerMap,
                  Mark&&) = delete;

/// One layer: src layer srcLayer to dst layer dstLayer (a per-layer load or backup; a load
/// during the forward pass is the case for overlapsCompute).
inline Transfer transferPerLayer(const Executor& executor, const Pool& src, const Pool& dst,
                                 Indices srcIndices, Indices dstIndices, int64_t srcLayer,
                                 int64_t dstLayer, bool overlapsCompute = false) {
  return transfer(executor, src, dst, srcIndices, dstIndices, LayerMap{srcLayer, dstLayer, 1},
                  overlapsCompute);
}
/// One layer, with TransferOptions.
inline Transfer transferPerLayer(const Executor& executor, const Pool& src, const Pool& dst,
                                 Indices srcIndices, Indices dstIndices, int64_t srcLayer,
                                 int64_t dstLayer, const TransferOptions& options) {
  return transfer(executor, src, dst, srcIndices, dstIndices, LayerMap{srcLayer, dstLayer, 1},
                  options);
}
/// One layer, with indices in device memory (the device form of transfer()), and the overlap
/// mark.
inline Transfer transferPerLayer(const Executor& executor, const Pool& src, const Pool& dst,
                                 DeviceIndices srcIndices, DeviceIndices dstIndices,
                                 int64_t srcLayer, int64_t dstLayer, bool overlapsCompute = false) {
  return transfer(executor, src, dst, srcIndices, dstIndices, LayerMap{srcLayer, dstLayer, 1},
                  overlapsCompute);
}
/// One layer, with indices in device memory and TransferOptions.
inline Transfer transferPerLayer(const Executor& executor, const Pool& src, const Pool& dst,
                                 DeviceIndices srcIndices, DeviceIndices dstIndices,
                                 int64_t srcLayer, int64_t dstLayer,
                                 const TransferOptions& options) {
  return transfer(executor, src, dst, srcIndices, dstIndices, LayerMap{srcLayer, dstLayer, 1},
                  options);
}

/// A bool where a layer number goes would be taken as layer 0 or 1 (transferPerLayer(..., 7,
/// true) meant overlapsCompute and would load layer 7 into layer 1): refused when compiling.
/// (The index parameters are the real ones, not deduced, so that braced lists are caught too.)
template <class SrcLayer, class DstLayer, class... Rest,
          typename std::enable_if<detail::AnyBool<SrcLayer, DstLayer>::value, int>::type = 0>
Transfer transferPerLayer(const Executor&, const Pool&, const Pool&, Indices, Indices, SrcLayer&&,
                          DstLayer&&, Rest&&...) = delete;
template <class SrcLayer, class DstLayer, class... Rest,
          typename std::enable_if<detail::AnyBool<SrcLayer, DstLayer>::value, int>::type = 0>
Transfer transferPerLayer(const Executor&, const Pool&, const Pool&, DeviceIndices, DeviceIndices,
                          SrcLayer&&, DstLayer&&, Rest&&...) = delete;
/// And the reverse: a number where overlapsCompute goes (transferPerLayer(..., 0, 0, 1): a
/// third layer number?) would be taken as true: refused when compiling too.
template <class Mark, typename std::enable_if<detail::NotAMark<Mark>::value, int>::type = 0>
Transfer transferPerLayer(const Executor&, const Pool&, const Pool&, Indices, Indices, int64_t,
                          int64_t, Mark&&) = delete;
template <class Mark, typename std::enable_if<detail::NotAMark<Mark>::value, int>::type = 0>
Transfer transferPerLayer(const Executor&, const Pool&, const Pool&, DeviceIndices, DeviceIndices,
                          int64_t, int64_t, Mark&&) = delete;

/// Every layer of dst, from src layers [srcLayerStart, srcLayerStart + dst layers): an
/// all-layer backup; with srcLayerStart > 0 the backup of a layer-sharded pool.
inline Transfer transferAllLayers(const Executor& executor, const Pool& src, const Pool& dst,
                                  Indices srcIndices, Indices dstIndices, int64_t srcLayerStart = 0,
                                  bool overlapsCompute = false) {
  return transfer(executor, src, dst, srcIndices, dstIndices,
                  LayerMap{srcLayerStart, 0, dst.spec().numLayers}, overlapsCompute);
}
/// Every layer of dst, with TransferOptions.
inline Transfer transferAllLayers(const Executor& executor, const Pool& src, const Pool& dst,
                                  Indices srcIndices, Indices dstIndices, int64_t srcLayerStart,
                                  const TransferOptions& options) {
  return transfer(executor, src, dst, srcIndices, dstIndices,
                  LayerMap{srcLayerStart, 0, dst.spec().numLayers}, options);
}
/// Every layer of dst, with indices in device memory (the device form of transfer()), and the
/// overlap mark.
inline Transfer transferAllLayers(const Executor& executor, const Pool& src, const Pool& dst,
                                  DeviceIndices srcIndices, DeviceIndices dstIndices,
                                  int64_t srcLayerStart = 0, bool overlapsCompute = false) {
  return transfer(executor, src, dst, srcIndices, dstIndices,
                  LayerMap{srcLayerStart, 0, dst.spec().numLayers}, overlapsCompute);
}
/// Every layer of dst, with indices in device memory and TransferOptions.
inline Transfer transferAllLayers(const Executor& executor, const Pool& src, const Pool& dst,
                                  DeviceIndices srcIndices, DeviceIndices dstIndices,
                                  int64_t srcLayerStart, const TransferOptions& options) {
  return transfer(executor, src, dst, srcIndices, dstIndices,
                  LayerMap{srcLayerStart, 0, dst.spec().numLayers}, options);
}

/// A bool where srcLayerStart goes would be taken as layer 0 or 1 (transferAllLayers(..., true)
/// meant overlapsCompute and would back up from layer 1): refused when compiling.
template <class SrcLayerStart, class... Rest,
          typename std::enable_if<detail::AnyBool<SrcLayerStart>::value, int>::type = 0>
Transfer transferAllLayers(const Executor&, const Pool&, const Pool&, Indices, Indices,
                           SrcLayerStart&&, Rest&&...) = delete;
template <class SrcLayerStart, class... Rest,
          typename std::enable_if<detail::AnyBool<SrcLayerStart>::value, int>::type = 0>
Transfer transferAllLayers(const Executor&, const Pool&, const Pool&, DeviceIndices, DeviceIndices,
                           SrcLayerStart&&, Rest&&...) = delete;
/// A number where overlapsCompute goes (transferAllLayers(..., 0, 5)) would be taken as true:
/// refused when compiling.
template <class Mark, typename std::enable_if<detail::NotAMark<Mark>::value, int>::type = 0>
Transfer transferAllLayers(const Executor&, const Pool&, const Pool&, Indices, Indices, int64_t,
                           Mark&&) = delete;
template <class Mark, typename std::enable_if<detail::NotAMark<Mark>::value, int>::type = 0>
Transfer transferAllLayers(const Executor&, const Pool&, const Pool&, DeviceIndices, DeviceIndices,
                           int64_t, Mark&&) = delete;

/// Expands page ids into token slots: page p becomes p*pageSize ... p*pageSize + pageSize-1.
/// INVALID_ARGUMENT for a pageSize below 1 or a page whose slots do not fit in int64 (an id
/// out of a pool's range otherwise is refused by the transfer, as any slot).
inline std::vector<int64_t> pageSlots(const std::vector<int64_t>& pages, int64_t pageSize) {
  if (pageSize < 1) {
    throw Error(KVIO_STATUS_INVALID_ARGUMENT,
                "pageSize must be at least 1, got " + std::to_string(pageSize));
  }
  const int64_t maxId = (std::numeric_limits<int64_t>::max() - (pageSize - 1)) / pageSize;
  const int64_t minId = std::numeric_limits<int64_t>::min() / pageSize;
  for (size_t i = 0; i < pages.size(); ++i) {
    if (pages[i] > maxId || pages[i] < minId) {
      throw Error(KVIO_STATUS_INVALID_ARGUMENT, "page " + std::to_string(pages[i]) + " (pages[" +
                                                    std::to_string(i) + "]) times pageSize " +
                                                    std::to_string(pageSize) + " overflows int64");
    }
  }
  std::vector<int64_t> slots;
  if (!pages.empty() && static_cast<uint64_t>(pageSize) > slots.max_size() / pages.size()) {
    throw Error(KVIO_STATUS_INVALID_ARGUMENT, std::to_string(pages.size()) + " pages of pageSize " +
                                                  std::to_string(pageSize) +
                                                  " are more slots than a vector holds");
  }
  try {
    slots.reserve(pages.size() * static_cast<size_t>(pageSize));
  } catch (const std::bad_alloc&) {
    throw Error(KVIO_STATUS_OUT_OF_MEMORY, "no memory for the " + std::to_string(pages.size()) +
                                               " x " + std::to_string(pageSize) +
                                               " token slots of these pages");
  }
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
  if (srcPages.size() != dstPages.size()) {
    throw Error(KVIO_STATUS_INVALID_ARGUMENT, "srcPages has " + std::to_string(srcPages.size()) +
                                                  " pages but dstPages has " +
                                                  std::to_string(dstPages.size()));
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

/// The dim exchange with its own start on each side: src layers [layers.srcStart, + count) to
/// dst layers [layers.dstStart, + count). A layer-sharded host pool (holding device layers
/// [deviceLayerStart, ...) as its layers 0, 1, ...) needs it: a backup is {deviceLayerStart, 0,
/// n}, a load of device layer l is {l - deviceLayerStart, l, 1}.
inline Transfer transferDimExchange(const Executor& executor, const Pool& src, const Pool& dst,
                                    const std::vector<int64_t>& srcPages,
                                    const std::vector<int64_t>& dstPages, LayerMap layers) {
  return transferDirect(executor, src, dst, srcPages, dstPages, layers);
}

}  // namespace kvio

#undef KVIO_NODISCARD

#endif  // KVIO_KVIO_HPP_
