// A pool as the core sees it: its spec, its affine layout bound to memory, the memory regions
// it covers and, when kvio allocated it, the allocation itself (held by in-flight transfers so
// that closing a pool never frees memory under a copy), and its PoolUsage: the transfers that
// use it and whether its memory has been released, which closing and waiting read.
#ifndef KVIO_CORE_POOL_HPP_
#define KVIO_CORE_POOL_HPP_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "executor.hpp"
#include "kvio/kvio.h"
#include "layout.hpp"

namespace kvio {

/// Host memory kvio allocated: 2 MiB aligned, huge pages advised, zero-filled.
class HostAllocation {
 public:
  static kvio_status create(uint64_t bytes, std::shared_ptr<HostAllocation>* out);
  ~HostAllocation();
  uint64_t address() const { return reinterpret_cast<uint64_t>(aligned_); }
  uint64_t bytes() const { return bytes_; }

 private:
  HostAllocation() = default;
  void* mapping_ = nullptr;
  uint64_t mappingBytes_ = 0;
  void* aligned_ = nullptr;
  uint64_t bytes_ = 0;
};

struct MemoryRegion {
  uint64_t address;
  uint64_t bytes;
};

/// Device memory services the core needs for pools of device and pinned memory kinds. The
/// backend that owns the kind provides them; a build without it reports UNAVAILABLE.
struct MemoryOps {
  /// Allocates `bytes` of pinned host or device memory, zero-filled; `owner` frees it.
  kvio_status (*allocate)(int32_t kind, int32_t device, uint64_t bytes, uint64_t* address,
                          std::shared_ptr<void>* owner);
  /// Makes caller memory usable: registers pinned host regions (in chunks;
  /// `owner` unregisters them) or checks that device regions are memory of `device`.
  /// *copyRegions: the regions cut where the registration under them changes (a region in two
  /// of them is two), when any region is; left empty otherwise.
  kvio_status (*adopt)(int32_t kind, int32_t device, const MemoryRegion* regions, size_t count,
                       std::shared_ptr<void>* owner, std::vector<MemoryRegion>* copyRegions);
  /// The address a kernel on `device` uses for `address` (its device pointer to it).
  kvio_status (*deviceAddress)(int32_t kind, int32_t device, uint64_t address, uint64_t* out);
  /// Copies `bytes` between device memory at `deviceAddress` (memory of `device`) and
  /// pageable host memory at `hostAddress`, synchronously (kvio_pool_copy); toHost: device to
  /// host.
  kvio_status (*copy)(int32_t kind, int32_t device, uint64_t deviceAddress, uint64_t hostAddress,
                      uint64_t bytes, bool toHost);
};
/// The services for memory of `kind` (a device or pinned kind), from the backend that owns it
/// (backends.cpp).
const MemoryOps& memoryOpsFor(int32_t kind);
/// True for device memory kinds (not addressable from the host; backends.cpp).
bool isDeviceMemory(int32_t kind);

/// The transfers submitted with a pool (weak references, pruned so the list stays bounded for
/// a pool used millions of times) and whether the pool's memory has been released (kvio's
/// registration ended, its allocation freed). Shared by the pool and whoever waits for it to
/// go after it was closed.
class PoolUsage {
 public:
  void add(const std::shared_ptr<TransferState>& transfer);
  /// The transfers not done yet. Polls each: one found done drops its pool references now.
  std::vector<std::shared_ptr<TransferState>> pending();
  /// Set when the pool is destroyed, after its memory was released.
  void markReleased();
  bool released() const;
  /// Waits until released or `deadline`; false if not released by then.
  bool waitReleased(std::chrono::steady_clock::time_point deadline);

 private:
  mutable std::mutex mutex_;
  std::condition_variable releasedChanged_;
  bool released_ = false;
  std::vector<std::weak_ptr<TransferState>> transfers_;
  size_t pruneAt_ = 16;
};

struct PoolImpl {
  /// Declared first, so destroyed last: marks the usage released once every other member (the
  /// memory) is gone.
  struct ReleaseNotice {
    std::shared_ptr<PoolUsage> usage = std::make_shared<PoolUsage>();
    ~ReleaseNotice() { usage->markReleased(); }
  } notice;
  /// Memory of other pools' kvio allocations that this pool's wrapped regions lie in
  /// (holdAllocatedMemory): held so that closing the pool that allocated it cannot free memory
  /// this one describes. Declared after `notice` only, so released after this pool's own memory
  /// and registration.
  std::vector<std::shared_ptr<void>> borrowed;
  kvio_pool_spec spec{};
  int32_t memoryKind = KVIO_MEMORY_HOST;
  int32_t device = -1;                    // device ordinal; -1 for pageable host memory
  std::vector<uint64_t> deviceLayerBase;  // layerBase as device code addresses it
  std::shared_ptr<void> memory;           // device allocation or registration (freed last)
  LayoutStrides strides;
  std::vector<uint64_t> layerBase;  // [layerTableIndex(num_layers, c, l)]
  std::vector<MemoryRegion> regions;
  /// `regions` cut where the device runtime's registration under them changes; empty when none
  /// is (kvio's allocations, device memory, a region in one registration). See copyRegions().
  std::vector<MemoryRegion> registeredPieces;
  std::shared_ptr<HostAllocation> allocation;
  AffineLayout layout;

  const std::shared_ptr<PoolUsage>& usage() const { return notice.usage; }
  int32_t components() const { return componentCount(spec.kind); }
  int64_t tokens() const { return spec.num_pages * spec.page_size; }
  /// What one copy-engine call may span: a region, or the part of it in one host registration
  /// (a copy engine resolves one registration per call, so a copy crossing two may fail).
  const std::vector<MemoryRegion>& copyRegions() const {
    return registeredPieces.empty() ? regions : registeredPieces;
  }
  /// Fills `layout` from spec, strides and layerBase.
  void bindLayout();
  /// Sets the memory kind; for device and pinned kinds allocates or adopts the memory (owner) and
  /// fills deviceLayerBase. Call after bindLayout.
  kvio_status bindMemory(int32_t kind, int32_t deviceOrdinal, std::shared_ptr<void> owner);
};

/// kvio_pool_prefault: backs every page of the pool's pageable host memory (KVIO_MEMORY_HOST),
/// keeping its bytes; other kinds are backed already (OK).
kvio_status prefaultPool(const PoolImpl& pool);

/// Records memory kvio allocated for a pool, [address, +bytes) of memory kind `kind` on `device`,
/// while `owner` (which frees it) lives, so that a pool wrapping part of it can hold it
/// (holdAllocatedMemory).
void noteAllocatedMemory(int32_t kind, int32_t device, uint64_t address, uint64_t bytes,
                         const std::shared_ptr<void>& owner);

/// The owners of the live kvio allocations that any of `regions` overlaps, in the address space
/// of memory kind `kind` on `device` (every host kind is one space, as for the aliasing check;
/// device memory is a space per kind and device).
std::vector<std::shared_ptr<void>> holdAllocatedMemory(int32_t kind, int32_t device,
                                                       const std::vector<MemoryRegion>& regions);

/// Lists the handle of a pool just opened with the closing pools (pool_close.cpp), so that
/// closing it later needs no memory: kvio_pool_close never fails for memory. Throws
/// std::bad_alloc (the caller then closes the pool it opened and fails).
void listForClose(uint64_t handle);

}  // namespace kvio

#endif  // KVIO_CORE_POOL_HPP_
