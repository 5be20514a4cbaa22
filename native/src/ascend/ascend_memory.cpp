// The Ascend memory services of the core (MemoryOps, pool.hpp): pool memory on an NPU
// (aclrtMalloc) and pinned host memory (aclrtMallocHost), wrapped caller memory (host memory
// pinned already is used as given, pageable memory is pinned; aclrtPointerGetAttributes tells the
// two apart), and kvio_pool_copy's copies through a pinned staging buffer. Caller host memory is
// page-locked with aclrtHostRegisterV2(ACL_HOST_REG_PINNED) through kvio's registries of host
// registrations (host_registry.hpp), one per device, over one process-wide table (the runtime
// keeps one for the whole process): pages pinned for one device are refused for another. The
// OS kernel's release decides whether pageable memory may be pinned at all (host_pinning.hpp;
// tests fake it: setKernelReleaseForTesting). Every ACL call that needs a context runs under a
// DeviceScope (acl_device.hpp); aclrtFreeHost needs none. The registry entry of the backend is in
// ascend_backend.cpp, its executor in ascend_executor.cpp.
#include <sys/utsname.h>

#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../core/backends.hpp"
#include "../core/error.hpp"
#include "../core/host_registry.hpp"
#include "../core/pool.hpp"
#include "acl_api.hpp"
#include "acl_device.hpp"
#include "ascend_copies.hpp"
#include "ascend_runtime.hpp"
#include "host_pinning.hpp"

namespace kvio {
namespace ascend {
namespace {

// ---- memory ----

// Released by whichever thread lets go last: aclrtFree under the device's scope. A failure has
// nobody to report to, and its text is cleared rather than left for a later call.
struct DeviceMemory {
  const AclApi* api = nullptr;
  void* pointer = nullptr;
  int32_t device = 0;
  ~DeviceMemory() {
    if (pointer == nullptr) return;
    DeviceScope scope(*api, device);
    if (scope.error() != ACL_SUCCESS || api->free(pointer) != ACL_SUCCESS) clearAclError(*api);
  }
};

// aclrtFreeHost needs no context.
struct PinnedHost {
  const AclApi* api = nullptr;
  void* pointer = nullptr;
  ~PinnedHost() {
    if (pointer != nullptr && api->freeHost(pointer) != ACL_SUCCESS) clearAclError(*api);
  }
};

// ---- the host registries' ACL runtime (host_registry.hpp) ----
// Caller host memory is page-locked with aclrtHostRegisterV2(ACL_HOST_REG_PINNED): the V1 call
// aclrtHostRegister maps host memory for the device's NIC and does not make it usable by the
// copy calls (its API reference), so kvio never uses it. ACL has no query of what a
// registration covers, so a range already registered by someone other than kvio is refused
// (covering is nullptr). aclrtHostRegisterV2 and aclrtHostUnregister need a current context:
// one registry per device (its HostRuntime::context is the device), each call under that
// device's scope, on whatever thread adopts or lets go of a pool last. CANN's runtime keeps ONE
// process-wide table of registered host ranges (not one per device): a range registered for
// one device cannot be registered for another (V2 answers "already registered"), and would be
// unregistered once only. kvio's own process-wide table (below) refuses it first, naming the
// device that holds it.

}  // namespace

namespace {
std::mutex& kernelReleaseMutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}
std::string* testKernelRelease = nullptr;  // kvio_test_ascend_kernel_release's, or none
}  // namespace

std::string kernelRelease() {
  {
    std::lock_guard<std::mutex> lock(kernelReleaseMutex());
    if (testKernelRelease != nullptr) return *testKernelRelease;
  }
  struct utsname host {};
  return uname(&host) == 0 ? std::string(host.release) : std::string();
}

void setKernelReleaseForTesting(const char* release) {
  std::lock_guard<std::mutex> lock(kernelReleaseMutex());
  delete testKernelRelease;
  testKernelRelease = release != nullptr ? new std::string(release) : nullptr;
}

namespace {

int32_t deviceOf(void* context) {
  return static_cast<int32_t>(reinterpret_cast<intptr_t>(context));
}

struct Pinned {
  uint64_t bytes;
  int32_t device;
  // kvio's aclrtHostUnregister of it failed when its last pool ended: the runtime may still hold
  // it. Its device's registry retries the unregistration at the next wrap over its pages
  // (HostRegistry); another device's wrap is told so here instead of "in use".
  bool stale = false;
};

// kvio's registrations of every device, by start address (under pinnedMutex()).
std::mutex& pinnedMutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}
std::map<uint64_t, Pinned>& pinnedRanges() {
  static auto* ranges = new std::map<uint64_t, Pinned>();  // never destroyed: pools may
  return *ranges;                                          // outlive statics
}

kvio_status registerRange(void* context, uint64_t address, uint64_t bytes,
                          bool* alreadyRegistered) {
  const AclApi* api = nullptr;
  KVIO_RETURN_IF_ERROR(runtime(&api));
  const int32_t device = deviceOf(context);
  if (api->hostRegisterV2 == nullptr) {  // adopt() refuses first; kept for a direct caller
    return fail(KVIO_STATUS_UNSUPPORTED, "%s has no aclrtHostRegisterV2", api->origin);
  }
  std::lock_guard<std::mutex> lock(pinnedMutex());
  std::map<uint64_t, Pinned>& ranges = pinnedRanges();
  // This device's registry shares its own registrations before it asks for new ones, so a
  // registration of kvio's that overlaps is another device's.
  auto next = ranges.lower_bound(address + bytes);
  if (next != ranges.begin()) {
    const auto holder = std::prev(next);
    if (holder->first + holder->second.bytes > address && holder->second.stale) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "host memory [0x%llx, 0x%llx) is still registered with ACL: kvio pinned it for "
                  "Ascend device %d, and its aclrtHostUnregister failed when that device's last "
                  "pool over it ended (kvio_debug_live_host_registrations still counts it), so "
                  "these pages cannot be pinned for another device; a wrap for Ascend device %d "
                  "retries the unregistration. Use other host memory (kvio_pool_allocate_memory "
                  "gives a pool its own)",
                  static_cast<unsigned long long>(holder->first),
                  static_cast<unsigned long long>(holder->first + holder->second.bytes),
                  holder->second.device, holder->second.device);
    }
    if (holder->first + holder->second.bytes > address) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "host memory [0x%llx, 0x%llx) is pinned by kvio for Ascend device %d already "
                  "(aclrtHostRegisterV2, for a pool of that device); ACL keeps one process-wide "
                  "table of registered host memory, so the same pages cannot be registered "
                  "again for Ascend device %d while that pool lives. Use separate host buffers "
                  "for each device (kvio_pool_allocate_memory gives each device its own), or "
                  "close the other device's pool first",
                  static_cast<unsigned long long>(holder->first),
                  static_cast<unsigned long long>(holder->first + holder->second.bytes),
                  holder->second.device, device);
    }
  }
  // Listed before it is made, so that nothing can fail (run out of memory) once it is.
  const auto listed = ranges.emplace(address, Pinned{bytes, device}).first;
  aclError e = ACL_SUCCESS;
  {
    DeviceScope scope(*api, device);
    if (scope.error() != ACL_SUCCESS) {
      ranges.erase(listed);
      return scopeFailure(scope, device, "registering host memory");
    }
    e = api->hostRegisterV2(reinterpret_cast<void*>(address), bytes, ACL_HOST_REG_PINNED);
  }
  if (e == ACL_SUCCESS) return KVIO_STATUS_OK;
  ranges.erase(listed);
  if (e == ACL_ERROR_HOST_MEMORY_ALREADY_REGISTERED) {
    clearAclError(*api);
    *alreadyRegistered = true;
    return KVIO_STATUS_OK;
  }
  return aclFailure(*api, e, "aclrtHostRegisterV2",
                    "pinning " + std::to_string(bytes) + " bytes of host memory at " +
                        format("0x%llx", static_cast<long long>(address)) +
                        format(" for Ascend device %lld (ACL_HOST_REG_PINNED). Wrap memory that "
                               "is pinned already (aclrtMallocHost, e.g. torch_npu's pinned "
                               "tensors) where the runtime has aclrtPointerGetAttributes, or "
                               "allocate the pool with kvio_pool_allocate_memory",
                               device));
}

// The registration ends in its device's context. A failure has nobody to report to (the pool
// is gone); its text is cleared rather than left for a later call, and the range stays listed,
// marked stale, so that a later wrap of those pages is told why they cannot be pinned.
bool unregisterRange(void* context, uint64_t address) {
  const AclApi* api = nullptr;
  std::map<uint64_t, Pinned>::iterator listed;
  if (runtime(&api) != KVIO_STATUS_OK) {
    std::lock_guard<std::mutex> lock(pinnedMutex());
    listed = pinnedRanges().find(address);
    if (listed != pinnedRanges().end()) listed->second.stale = true;
    return false;
  }
  std::lock_guard<std::mutex> lock(pinnedMutex());
  listed = pinnedRanges().find(address);
  DeviceScope scope(*api, deviceOf(context));
  const aclError e = scope.error() != ACL_SUCCESS
                         ? scope.error()
                         : api->hostUnregister(reinterpret_cast<void*>(address));
  // "Not registered" is an end too: the registration is gone already (the caller unregistered
  // it, or the device was reset).
  if (e != ACL_SUCCESS &&
      (scope.error() != ACL_SUCCESS || e != ACL_ERROR_HOST_MEMORY_NOT_REGISTERED)) {
    clearAclError(*api);
    if (listed != pinnedRanges().end()) listed->second.stale = true;
    return false;
  }
  if (e != ACL_SUCCESS) clearAclError(*api);
  if (listed != pinnedRanges().end()) pinnedRanges().erase(listed);
  return true;
}

// Device `device`'s registrations (checkDevice has checked it).
HostRegistry& registry(int32_t device) {
  static std::mutex* mutex = new std::mutex();
  static auto* registries = new std::map<int32_t, HostRegistry*>();  // never destroyed: pools
  std::lock_guard<std::mutex> lock(*mutex);                          // may outlive statics
  HostRegistry*& r = (*registries)[device];
  if (r == nullptr) {
    r = new HostRegistry(HostRuntime{"ACL", "aclrtHostRegisterV2", 0,
                                     reinterpret_cast<void*>(static_cast<intptr_t>(device)),
                                     registerRange, unregisterRange, nullptr});
  }
  return *r;
}

kvio_status allocate(int32_t kind, int32_t device, uint64_t bytes, uint64_t* address,
                     std::shared_ptr<void>* owner) {
  const AclApi* api = nullptr;
  KVIO_RETURN_IF_ERROR(runtime(&api));
  KVIO_RETURN_IF_ERROR(checkDevice(*api, device));
  KVIO_ACL_SCOPE(scope, *api, device, "allocating a pool's memory");
  if (kind == KVIO_MEMORY_ASCEND_HOST_PINNED) {
    auto memory = std::make_shared<PinnedHost>();
    memory->api = api;
    KVIO_ACL_TRY(*api, api->mallocHost(&memory->pointer, bytes),
                 format("allocating %llu bytes of pinned host memory for a pool",
                        static_cast<long long>(bytes)));
    std::memset(memory->pointer, 0, bytes);
    *address = reinterpret_cast<uint64_t>(memory->pointer);
    *owner = std::move(memory);
    return KVIO_STATUS_OK;
  }
  auto memory = std::make_shared<DeviceMemory>();
  memory->api = api;
  memory->device = device;
  KVIO_ACL_TRY(*api, api->malloc(&memory->pointer, bytes, ACL_MEM_MALLOC_HUGE_FIRST),
               format("allocating %llu bytes on Ascend device %lld for a pool",
                      static_cast<long long>(bytes), device));
  const RelaxedCapture relaxed(*api);  // aclrtMemset is "unsafe" beside a capture
  KVIO_ACL_TRY(
      *api, api->memset(memory->pointer, bytes, 0, bytes),
      format("zeroing %llu bytes on Ascend device %lld", static_cast<long long>(bytes), device));
  *address = reinterpret_cast<uint64_t>(memory->pointer);
  *owner = std::move(memory);
  return KVIO_STATUS_OK;
}

// ---- wrapping caller host memory as KVIO_MEMORY_ASCEND_HOST_PINNED ----
// Serving engines hand kvio host memory that is page-locked already: torch_npu's pinned tensors
// (torch.empty(pin_memory=True), sglang's NPU host pool) come from aclrtMallocHost. Such memory
// is used as given: no registration, so nothing for kvio to end (the caller's allocation or
// registration is the caller's). Pageable memory is pinned with aclrtHostRegisterV2 through
// kvio's registry. aclrtPointerGetAttributes tells the two apart: CANN's runtime answers HOST for
// memory the driver knows as page-locked host memory (aclrtMallocHost) and for user memory in its
// table of host registrations, UNREGISTERED for other user memory (malloc, mmap), DEVICE for NPU
// memory (NpuDriver::PtrGetAttributes). It answers for one address, so kvio asks for a region's
// first and last byte and accepts only two equal answers. That takes a region to be one buffer:
// two answers cannot see pageable or unmapped memory between two pinned ends (docs/ascend.md,
// "Limits"); asking page by page is not done because the query's cost on an NPU machine is
// unmeasured and a large pool has millions of pages.

// What a wrapped region is, by its first and last byte.
enum class HostMemory {
  kPinnedAlready,  // both HOST, and not kvio's own registration: used as given
  kToPin,          // both UNREGISTERED, or kvio's own registration (shared by the registry)
  kUnknown,        // the runtime has no answer (no query, or it failed): pinned as kToPin
};

const char* locationName(uint32_t type) {
  switch (type) {
    case ACL_MEM_LOCATION_TYPE_HOST: return "HOST (pinned or registered host memory)";
    case ACL_MEM_LOCATION_TYPE_DEVICE: return "DEVICE (NPU memory)";
    case ACL_MEM_LOCATION_TYPE_UNREGISTERED: return "UNREGISTERED (pageable host memory)";
    case 3: return "MANAGED (unified virtual memory)";
    case 4: return "HOST_NUMA (aclrtMallocPhysical host memory)";
    default: return "a location type kvio does not know";
  }
}

// True when [address, address + bytes) overlaps a registration kvio made (any device's; stale
// ones too). Caller holds pinnedMutex().
bool overlapsKviosRegistration(uint64_t address, uint64_t bytes) {
  const std::map<uint64_t, Pinned>& ranges = pinnedRanges();
  auto next = ranges.lower_bound(address + bytes);
  if (next == ranges.begin()) return false;
  const auto holder = std::prev(next);
  return holder->first + holder->second.bytes > address;
}

// Classifies region `index`. The query runs under pinnedMutex(): kvio's own registrations (which
// the runtime also answers HOST for) neither begin nor end meanwhile, so such a region goes to
// the registry, which shares them (or refuses another device's), and is never taken for the
// caller's. *unknown: why the runtime could not tell, when it could not.
kvio_status classifyRegion(const AclApi& api, size_t index, const MemoryRegion& region,
                           HostMemory* out, std::string* unknown) {
  std::lock_guard<std::mutex> lock(pinnedMutex());
  if (overlapsKviosRegistration(region.address, region.bytes)) {
    *out = HostMemory::kToPin;
    return KVIO_STATUS_OK;
  }
  const uint64_t ends[2] = {region.address,
                            region.address + (region.bytes == 0 ? 0 : region.bytes - 1)};
  aclrtPtrAttributes found[2] = {};
  for (int i = 0; i < 2; ++i) {
    const aclError e = api.pointerGetAttributes(reinterpret_cast<const void*>(ends[i]), &found[i]);
    if (e != ACL_SUCCESS) {
      // Not a refusal: before this query existed kvio pinned every region, and still can.
      *unknown = "aclrtPointerGetAttributes(" + format("0x%llx", static_cast<long long>(ends[i])) +
                 ") failed with " + describeAclError(api, e);
      *out = HostMemory::kUnknown;
      return KVIO_STATUS_OK;
    }
  }
  const uint32_t first = found[0].location.type;
  const uint32_t last = found[1].location.type;
  const unsigned long long begin = region.address;
  const unsigned long long end = region.address + region.bytes;
  if (first == ACL_MEM_LOCATION_TYPE_HOST && last == ACL_MEM_LOCATION_TYPE_HOST) {
    *out = HostMemory::kPinnedAlready;
    return KVIO_STATUS_OK;
  }
  if (first == ACL_MEM_LOCATION_TYPE_UNREGISTERED && last == ACL_MEM_LOCATION_TYPE_UNREGISTERED) {
    *out = HostMemory::kToPin;
    return KVIO_STATUS_OK;
  }
  if (first == ACL_MEM_LOCATION_TYPE_DEVICE || last == ACL_MEM_LOCATION_TYPE_DEVICE) {
    const aclrtPtrAttributes& device = first == ACL_MEM_LOCATION_TYPE_DEVICE ? found[0] : found[1];
    return fail(KVIO_STATUS_INVALID_ARGUMENT,
                "region %zu of the pool, [0x%llx, 0x%llx), is not host memory: "
                "aclrtPointerGetAttributes says its first byte is %s and its last byte %s (NPU "
                "device %u). Wrap NPU memory as KVIO_MEMORY_ASCEND_DEVICE, or give "
                "KVIO_MEMORY_ASCEND_HOST_PINNED host memory",
                index, begin, end, locationName(first), locationName(last), device.location.id);
  }
  if ((first == ACL_MEM_LOCATION_TYPE_HOST && last == ACL_MEM_LOCATION_TYPE_UNREGISTERED) ||
      (first == ACL_MEM_LOCATION_TYPE_UNREGISTERED && last == ACL_MEM_LOCATION_TYPE_HOST)) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT,
                "region %zu of the pool, [0x%llx, 0x%llx), is partly pinned: "
                "aclrtPointerGetAttributes says its first byte is %s and its last byte %s, so it "
                "runs over the end of an aclrtMallocHost allocation or an ACL host registration. "
                "Give each region inside one pinned buffer (e.g. one torch_npu pinned tensor), or "
                "pageable memory only (kvio pins it with aclrtHostRegisterV2)",
                index, begin, end, locationName(first), locationName(last));
  }
  return fail(KVIO_STATUS_UNSUPPORTED,
              "region %zu of the pool, [0x%llx, 0x%llx): aclrtPointerGetAttributes says its "
              "first byte is %s (%u) and its last byte %s (%u); kvio wraps as "
              "KVIO_MEMORY_ASCEND_HOST_PINNED only host memory that is pinned already "
              "(aclrtMallocHost) or pageable (kvio pins it). Allocate the pool with "
              "kvio_pool_allocate_memory instead",
              index, begin, end, locationName(first), first, locationName(last), last);
}

// Wrapped NPU memory, region `index`: where the runtime has aclrtPointerGetAttributes, its first
// and last byte must be DEVICE, so that host memory or a buffer shorter than the region is
// refused here rather than faulting the NPU's DMA mid-transfer. The device id the runtime reports
// is not compared with `device`: the runtime may answer the physical id where kvio has the
// logical one (ASCEND_RT_VISIBLE_DEVICES), and a false refusal would block a valid pool. A query
// that fails is no answer (as for host memory): the region is used as given, and the runtime's
// text of the failure cleared. Called in the device's context, as the host query is.
kvio_status checkDeviceRegion(const AclApi& api, size_t index, const MemoryRegion& region) {
  const uint64_t ends[2] = {region.address,
                            region.address + (region.bytes == 0 ? 0 : region.bytes - 1)};
  aclrtPtrAttributes found[2] = {};
  for (int i = 0; i < 2; ++i) {
    if (api.pointerGetAttributes(reinterpret_cast<const void*>(ends[i]), &found[i]) !=
        ACL_SUCCESS) {
      clearAclError(api);
      return KVIO_STATUS_OK;
    }
  }
  const uint32_t first = found[0].location.type;
  const uint32_t last = found[1].location.type;
  if (first == ACL_MEM_LOCATION_TYPE_DEVICE && last == ACL_MEM_LOCATION_TYPE_DEVICE)
    return KVIO_STATUS_OK;
  const bool partly = first == ACL_MEM_LOCATION_TYPE_DEVICE;  // begins in NPU memory, ends past it
  return fail(KVIO_STATUS_INVALID_ARGUMENT,
              "region %zu of the pool, [0x%llx, 0x%llx), is not NPU memory%s: "
              "aclrtPointerGetAttributes says its first byte is %s and its last byte %s. %s",
              index, static_cast<unsigned long long>(region.address),
              static_cast<unsigned long long>(region.address + region.bytes),
              partly ? " to its end" : "", locationName(first), locationName(last),
              partly ? "It runs past the end of an NPU allocation: give the size the spec needs "
                       "(kvio_pool_component_bytes), inside one aclrtMalloc buffer"
                     : "Wrap host memory as KVIO_MEMORY_ASCEND_HOST_PINNED, NPU memory (e.g. a "
                       "torch_npu tensor's data pointer) as KVIO_MEMORY_ASCEND_DEVICE");
}

kvio_status adopt(int32_t kind, int32_t device, const MemoryRegion* regions, size_t count,
                  std::shared_ptr<void>* owner, std::vector<MemoryRegion>* copyRegions) {
  const AclApi* api = nullptr;
  KVIO_RETURN_IF_ERROR(runtime(&api));
  KVIO_RETURN_IF_ERROR(checkDevice(*api, device));
  if (kind == KVIO_MEMORY_ASCEND_DEVICE) {
    if (api->pointerGetAttributes != nullptr) {
      KVIO_ACL_SCOPE(scope, *api, device, "asking where wrapped NPU memory lies");
      for (size_t i = 0; i < count; ++i) {
        KVIO_RETURN_IF_ERROR(checkDeviceRegion(*api, i, regions[i]));
      }
    }
    *owner = std::make_shared<int>(0);  // the caller owns the memory; used as given
    return KVIO_STATUS_OK;
  }
  std::vector<HostMemory> memory(count, HostMemory::kUnknown);
  std::string unknown;  // why the runtime could not tell (the first region it could not)
  if (api->pointerGetAttributes != nullptr) {
    KVIO_ACL_SCOPE(scope, *api, device, "asking where wrapped host memory lies");
    for (size_t i = 0; i < count; ++i) {
      std::string why;
      KVIO_RETURN_IF_ERROR(classifyRegion(*api, i, regions[i], &memory[i], &why));
      if (unknown.empty() && !why.empty())
        unknown = format("region %lld: ", static_cast<long long>(i)) + why;
    }
  } else {
    unknown = std::string(api->origin) +
              " has no aclrtPointerGetAttributes, which tells memory that is pinned already "
              "(aclrtMallocHost, e.g. torch_npu's pinned tensors) from pageable memory";
  }
  // The regions kvio pins (through its registry), in order; the others are used as given.
  std::vector<MemoryRegion> toPin;
  size_t firstToPin = count;
  for (size_t i = 0; i < count; ++i) {
    if (memory[i] == HostMemory::kPinnedAlready) continue;
    if (toPin.empty()) firstToPin = i;
    toPin.push_back(regions[i]);
  }
  if (toPin.empty()) {
    // Pinned by the caller: kvio neither registers nor ends anything. Each region answered HOST
    // at both ends; copies are cut at region boundaries.
    *owner = std::make_shared<int>(0);
    return KVIO_STATUS_OK;
  }
  const MemoryRegion& first = regions[firstToPin];
  const std::string what =
      format("region %lld of the pool, ", static_cast<long long>(firstToPin)) +
      format("[0x%llx, ", static_cast<long long>(first.address)) +
      format("0x%llx), ", static_cast<long long>(first.address + first.bytes)) +
      (memory[firstToPin] == HostMemory::kToPin
           ? std::string("is pageable host memory (aclrtPointerGetAttributes: UNREGISTERED), "
                         "which kvio must pin")
           : "needs pinning as far as kvio can tell (" + unknown + ")");
  if (api->hostRegisterV2 == nullptr) {
    return fail(KVIO_STATUS_UNSUPPORTED,
                "%s, and this ACL runtime (%s) has no aclrtHostRegisterV2, the only call that "
                "pins (page-locks) existing host memory for the NPU's copies (aclrtHostRegister "
                "maps it for the NPU's NIC and does not pin it: copies from it fail "
                "unpredictably), so it cannot be wrapped as KVIO_MEMORY_ASCEND_HOST_PINNED. Wrap "
                "memory that is pinned already (aclrtMallocHost, e.g. torch_npu's pinned "
                "tensors; recognised where the runtime has aclrtPointerGetAttributes), allocate "
                "the pool with kvio_pool_allocate_memory (kvio uses aclrtMallocHost), or use a "
                "CANN whose runtime has aclrtHostRegisterV2 (documented from 8.5.0)",
                what.c_str(), api->origin);
  }
  const std::string release = kernelRelease();
  if (!kernelPinsPageableMemory(release.c_str())) {
    return fail(KVIO_STATUS_UNSUPPORTED,
                "%s, but this machine's OS kernel is %s, and CANN documents that on kernels 5.10 "
                "and older pinning pageable memory with aclrtHostRegisterV2 leads to errors (only "
                "memory from aclrtMallocHost may be registered there). Wrap memory that is pinned "
                "already (aclrtMallocHost, e.g. torch_npu's pinned tensors; recognised where the "
                "runtime has aclrtPointerGetAttributes), allocate the pool with "
                "kvio_pool_allocate_memory (kvio uses aclrtMallocHost), or run on a kernel above "
                "5.10",
                what.c_str(), release.c_str());
  }
  std::vector<std::vector<uint64_t>> pinnedPieces;
  KVIO_RETURN_IF_ERROR(registry(device).acquire(toPin.data(), toPin.size(), owner, &pinnedPieces));
  // Every region's pieces: a region pinned already is one piece (one allocation).
  std::vector<std::vector<uint64_t>> pieces(count);
  for (size_t i = 0, k = 0; i < count; ++i) {
    pieces[i] = memory[i] == HostMemory::kPinnedAlready ? std::vector<uint64_t>{regions[i].address}
                                                        : std::move(pinnedPieces[k++]);
  }
  *copyRegions = HostRegistry::piecesOf(regions, count, pieces);
  return KVIO_STATUS_OK;
}

kvio_status deviceAddress(int32_t, int32_t, uint64_t address, uint64_t* out) {
  *out = address;  // the copy engine takes host and device addresses as they are
  return KVIO_STATUS_OK;
}

// kvio_pool_copy for NPU memory. aclrtMemcpyAsync needs pinned host memory, and the caller's
// is pageable, so the bytes go through a pinned staging buffer (aclrtMallocHost, at most
// kStagingBytes) on a private stream, synchronized after each piece.
constexpr uint64_t kStagingBytes = 16ull << 20;

kvio_status copy(int32_t, int32_t device, uint64_t deviceAddress, uint64_t hostAddress,
                 uint64_t bytes, bool toHost) {
  const AclApi* api = nullptr;
  KVIO_RETURN_IF_ERROR(runtime(&api));
  KVIO_RETURN_IF_ERROR(checkDevice(*api, device));
  KVIO_ACL_SCOPE(scope, *api, device, "copying a pool's memory");
  const uint64_t stagingBytes = bytes < kStagingBytes ? bytes : kStagingBytes;
  PinnedHost staging;
  staging.api = api;
  KVIO_ACL_TRY(*api, api->mallocHost(&staging.pointer, stagingBytes),
               format("allocating %llu bytes of pinned staging memory to copy a pool's memory",
                      static_cast<long long>(stagingBytes)));
  aclrtStream stream = nullptr;
  KVIO_ACL_TRY(*api, api->createStream(&stream),
               format("creating a stream to copy a pool's memory on Ascend device %lld", device));
  kvio_status status = KVIO_STATUS_OK;
  auto* stage = static_cast<unsigned char*>(staging.pointer);
  for (uint64_t done = 0; done < bytes && status == KVIO_STATUS_OK;) {
    const uint64_t n = bytes - done < stagingBytes ? bytes - done : stagingBytes;
    auto* onDevice = reinterpret_cast<void*>(deviceAddress + done);
    auto* onHost = reinterpret_cast<unsigned char*>(hostAddress + done);
    if (!toHost) std::memcpy(stage, onHost, n);
    aclError e = toHost
                     ? api->memcpyAsync(stage, n, onDevice, n, ACL_MEMCPY_DEVICE_TO_HOST, stream)
                     : api->memcpyAsync(onDevice, n, stage, n, ACL_MEMCPY_HOST_TO_DEVICE, stream);
    const char* call = "aclrtMemcpyAsync";
    // Synchronized even after a failed call: the staging buffer is freed below.
    const aclError waited = api->synchronizeStream(stream);
    if (e == ACL_SUCCESS && waited != ACL_SUCCESS) {
      e = waited;
      call = "aclrtSynchronizeStream";
    }
    if (e != ACL_SUCCESS) {
      status = aclFailure(
          *api, e, call,
          format(toHost ? "copying %llu bytes of Ascend device memory to the host, at byte "
                          "%llu of the copy"
                        : "copying %llu bytes from the host to Ascend device "
                          "memory, at byte %llu of the copy",
                 static_cast<long long>(n), static_cast<long long>(done)));
      break;
    }
    if (toHost) std::memcpy(onHost, stage, n);
    done += n;
  }
  const aclError destroyed = api->destroyStream(stream);
  if (status == KVIO_STATUS_OK && destroyed != ACL_SUCCESS) {
    return aclFailure(*api, destroyed, "aclrtDestroyStream",
                      "destroying the stream of a copy of a pool's memory");
  }
  return status;
}

const MemoryOps kAscendMemory{allocate, adopt, deviceAddress, copy};

}  // namespace
}  // namespace ascend

const MemoryOps& ascendMemoryOps() {
  return ascend::kAscendMemory;
}

}  // namespace kvio
