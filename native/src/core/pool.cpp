// Host allocations and pool binding (see pool.hpp).
#include "pool.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "diagnostics.hpp"
#include "error.hpp"

namespace kvio {

namespace {
constexpr uint64_t kHugePage = 2ull << 20;

// kvio's allocations for pools by address space and start address: their end and their owner,
// while it lives. Live allocations of one space never overlap; entries whose owner is gone are
// dropped before each use (an address may be given out again).
struct AllocatedMemory {
  uint64_t end = 0;
  std::weak_ptr<void> owner;
};

// The address space of memory kind `kind` on `device`: every host kind is the process's one
// space (-1); device memory (an NPU's addresses may repeat another's or the host's) is one space
// per kind and device.
int64_t addressSpace(int32_t kind, int32_t device) {
  return isDeviceMemory(kind) ? (int64_t{kind} << 32) | static_cast<uint32_t>(device) : -1;
}

using Allocations = std::map<std::pair<int64_t, uint64_t>, AllocatedMemory>;

std::mutex& allocatedMemoryLock() {
  static auto* m = new std::mutex;  // never destroyed: pools may close during static destruction
  return *m;
}

Allocations& allocatedMemory() {
  static auto* a = new Allocations;
  return *a;
}

void dropFreedMemory(Allocations* all) {
  for (auto it = all->begin(); it != all->end();) {
    it = it->second.owner.expired() ? all->erase(it) : std::next(it);
  }
}
}  // namespace

void noteAllocatedMemory(int32_t kind, int32_t device, uint64_t address, uint64_t bytes,
                         const std::shared_ptr<void>& owner) {
  std::lock_guard<std::mutex> lock(allocatedMemoryLock());
  auto& all = allocatedMemory();
  dropFreedMemory(&all);
  all[{addressSpace(kind, device), address}] = AllocatedMemory{address + bytes, owner};
}

std::vector<std::shared_ptr<void>> holdAllocatedMemory(int32_t kind, int32_t device,
                                                       const std::vector<MemoryRegion>& regions) {
  std::vector<std::shared_ptr<void>> held;
  const int64_t space = addressSpace(kind, device);
  std::lock_guard<std::mutex> lock(allocatedMemoryLock());
  auto& all = allocatedMemory();
  dropFreedMemory(&all);
  if (all.empty()) return held;
  for (const MemoryRegion& r : regions) {
    // The allocation of this space starting at or before the region, then those starting in it.
    auto it = all.upper_bound({space, r.address});
    if (it != all.begin() && std::prev(it)->first.first == space) --it;
    for (; it != all.end() && it->first.first == space && it->first.second < r.address + r.bytes;
         ++it) {
      if (it->second.end <= r.address) continue;
      std::shared_ptr<void> owner = it->second.owner.lock();
      if (owner != nullptr && std::find(held.begin(), held.end(), owner) == held.end()) {
        held.push_back(std::move(owner));
      }
    }
  }
  return held;
}

kvio_status HostAllocation::create(uint64_t bytes, std::shared_ptr<HostAllocation>* out) {
  if (bytes == 0 || bytes > (1ull << 62)) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT, "cannot allocate %llu bytes",
                static_cast<unsigned long long>(bytes));
  }
  const uint64_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  const uint64_t mappingBytes = rounded + kHugePage;
  if (KVIO_FAULT(kFaultHostAllocation)) {
    return fail(KVIO_STATUS_OUT_OF_MEMORY,
                "mmap of %llu bytes of host memory for a pool failed (fault injected by "
                "kvio_test_inject_fault)",
                static_cast<unsigned long long>(mappingBytes));
  }
  void* mapping =
      mmap(nullptr, mappingBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) {
    const int error = errno;
    return fail(KVIO_STATUS_OUT_OF_MEMORY,
                "mmap of %llu bytes of host memory for a pool failed: %s",
                static_cast<unsigned long long>(mappingBytes), std::strerror(error));
  }
  const uint64_t start = reinterpret_cast<uint64_t>(mapping);
  const uint64_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
#ifdef MADV_HUGEPAGE
  madvise(reinterpret_cast<void*>(aligned), rounded, MADV_HUGEPAGE);  // advice only
#endif
  std::shared_ptr<HostAllocation> allocation(new HostAllocation());
  allocation->mapping_ = mapping;
  allocation->mappingBytes_ = mappingBytes;
  allocation->aligned_ = reinterpret_cast<void*>(aligned);
  allocation->bytes_ = bytes;
  liveHostAllocations.fetch_add(1, std::memory_order_relaxed);
  *out = std::move(allocation);
  return KVIO_STATUS_OK;
}

HostAllocation::~HostAllocation() {
  if (mapping_ != nullptr) {
    munmap(mapping_, mappingBytes_);
    liveHostAllocations.fetch_sub(1, std::memory_order_relaxed);
  }
}

void PoolUsage::add(const std::shared_ptr<TransferState>& transfer) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (transfers_.size() >= pruneAt_) {
    transfers_.erase(std::remove_if(transfers_.begin(), transfers_.end(),
                                    [](const std::weak_ptr<TransferState>& weak) {
                                      const std::shared_ptr<TransferState> t = weak.lock();
                                      return t == nullptr || t->settled();
                                    }),
                     transfers_.end());
    pruneAt_ = std::max<size_t>(16, 2 * transfers_.size());
  }
  transfers_.push_back(transfer);
}

std::vector<std::shared_ptr<TransferState>> PoolUsage::pending() {
  std::vector<std::shared_ptr<TransferState>> live;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const std::weak_ptr<TransferState>& weak : transfers_) {
      std::shared_ptr<TransferState> t = weak.lock();
      if (t != nullptr) live.push_back(std::move(t));
    }
  }
  // Outside the lock: a transfer found done drops its pools, and the last may be this one.
  std::vector<std::shared_ptr<TransferState>> notDone;
  for (std::shared_ptr<TransferState>& t : live) {
    // One submitted before this process was forked is not polled here: its device event (or
    // worker) is the parent's. It stays pending (kvio_pool_close_wait refuses it).
    if (!t->settled() && (!t->submittedHere() || !t->isDone())) notDone.push_back(std::move(t));
  }
  return notDone;
}

void PoolUsage::markReleased() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    released_ = true;
    transfers_.clear();
  }
  releasedChanged_.notify_all();
}

bool PoolUsage::released() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return released_;
}

bool PoolUsage::waitReleased(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  return releasedChanged_.wait_until(lock, deadline, [this] { return released_; });
}

void PoolImpl::bindLayout() {
  layout.components = components();
  layout.numLayers = spec.num_layers;
  layout.pageSize = spec.page_size;
  layout.tokens = tokens();
  layout.headNum = spec.head_num;
  layout.headBytes = spec.head_bytes;
  layout.strideP = strides.strideP;
  layout.strideS = strides.strideS;
  layout.strideH = strides.strideH;
  layout.layerBase = layerBase.data();
}

kvio_status PoolImpl::bindMemory(int32_t kind, int32_t deviceOrdinal, std::shared_ptr<void> owner) {
  memoryKind = kind;
  device = kind == KVIO_MEMORY_HOST ? -1 : deviceOrdinal;
  if (kind == KVIO_MEMORY_HOST) {
    deviceLayerBase.clear();
    return KVIO_STATUS_OK;
  }
  const MemoryOps& ops = memoryOpsFor(kind);
  if (owner == nullptr) {  // wrapped caller memory: register or check it
    KVIO_RETURN_IF_ERROR(
        ops.adopt(kind, device, regions.data(), regions.size(), &owner, &registeredPieces));
  }
  memory = std::move(owner);
  deviceLayerBase.resize(layerBase.size());
  for (size_t i = 0; i < layerBase.size(); ++i) {
    KVIO_RETURN_IF_ERROR(ops.deviceAddress(kind, device, layerBase[i], &deviceLayerBase[i]));
  }
  return KVIO_STATUS_OK;
}

namespace {

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older headers lack the name
#endif

uint64_t pageBytes() {
  const long system = sysconf(_SC_PAGESIZE);
  return system > 0 ? static_cast<uint64_t>(system) : 4096;
}

// Whether this kernel has MADV_POPULATE_WRITE (Linux 5.14), asked of a writable page of our own
// (for memory that cannot be written, the call answers EINVAL as an old kernel does, so the
// caller's memory cannot tell). Only the kernel's answer is kept: "no" is EINVAL, the answer of a
// kernel that does not know the advice; a probe that fails otherwise (no memory for the page)
// says nothing about the kernel: kUnknown, with its errno in *probeError, asked again next time.
enum class Populate { kUnknown, kYes, kNo };
std::atomic<Populate> gPopulate{Populate::kUnknown};

Populate kernelPopulates(int* probeError) {
  const Populate known = gPopulate.load(std::memory_order_relaxed);
  if (known != Populate::kUnknown) return known;
  void* page =
      mmap(nullptr, pageBytes(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) {
    *probeError = errno;
    return Populate::kUnknown;
  }
  const int answer = madvise(page, pageBytes(), MADV_POPULATE_WRITE) == 0 ? 0 : errno;
  munmap(page, pageBytes());
  if (answer != 0 && answer != EINVAL) {
    *probeError = answer;
    return Populate::kUnknown;
  }
  const Populate learned = answer == 0 ? Populate::kYes : Populate::kNo;
  gPopulate.store(learned, std::memory_order_relaxed);
  return learned;
}

// Backs [address, +bytes) of region `index` (kvio_pool_prefault). `ownMemory`: kvio allocated it
// (writable, ours), so a kernel without MADV_POPULATE_WRITE, or one that could not be asked,
// touches each page instead; caller memory, which kvio does not write, gets the reason it was not
// backed.
kvio_status prefaultRegion(size_t index, uint64_t address, uint64_t bytes, bool ownMemory) {
  if (bytes == 0) return KVIO_STATUS_OK;
  const uint64_t page = pageBytes();
  const auto ull = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  int probeError = 0;
  const Populate populates = KVIO_FAULT(kFaultPopulateProbe)
                                 ? (probeError = ENOMEM, Populate::kUnknown)
                                 : kernelPopulates(&probeError);
  if (populates == Populate::kUnknown && !ownMemory) {
    return fail(probeError == ENOMEM || probeError == EAGAIN ? KVIO_STATUS_OUT_OF_MEMORY
                                                             : KVIO_STATUS_BACKEND_ERROR,
                "prefaulting region %zu (%llu bytes at 0x%llx): asking the kernel whether it "
                "has madvise(MADV_POPULATE_WRITE) failed on a page of kvio's own: %s",
                index, ull(bytes), ull(address), std::strerror(probeError));
  }
  if (populates != Populate::kYes || KVIO_FAULT(kFaultNoPopulate)) {
    if (!ownMemory) {
      return fail(KVIO_STATUS_UNSUPPORTED,
                  "prefaulting region %zu (%llu bytes at 0x%llx): this kernel has no "
                  "madvise(MADV_POPULATE_WRITE) (Linux 5.14), and kvio does not write to caller "
                  "memory; touch a byte of each of its pages yourself",
                  index, ull(bytes), ull(address));
    }
    // kvio's own memory: one byte of each page written back as it is (atomically, so that a
    // transfer writing the page meanwhile loses nothing).
    for (uint64_t at = address; at < address + bytes; at = (at / page + 1) * page) {
      __atomic_fetch_add(reinterpret_cast<uint8_t*>(at), uint8_t{0}, __ATOMIC_RELAXED);
    }
    return KVIO_STATUS_OK;
  }
  const uint64_t first = address / page * page;
  const uint64_t end = (address + bytes + page - 1) / page * page;
  if (madvise(reinterpret_cast<void*>(first), end - first, MADV_POPULATE_WRITE) == 0) {
    return KVIO_STATUS_OK;
  }
  // The answers madvise(2) documents for MADV_POPULATE_WRITE, each with what it means here.
  const int error = errno;
  const char* meaning = nullptr;
  kvio_status status = KVIO_STATUS_BACKEND_ERROR;
  switch (error) {
    case EINVAL:
    case EPERM:
      status = KVIO_STATUS_INVALID_ARGUMENT;
      meaning =
          "its memory cannot be backed for writing (a read-only mapping, or not ordinary "
          "memory: VM_IO or VM_PFNMAP)";
      break;
    case EFAULT:
      status = KVIO_STATUS_OUT_OF_MEMORY;
      meaning =
          "a write to it would raise SIGBUS (huge pages of a hugetlb mapping exhausted, or "
          "a file mapping past the end of its file)";
      break;
#ifdef EHWPOISON
    case EHWPOISON:
      meaning = "a page of it is hardware-poisoned (a memory error the kernel caught)";
      break;
#endif
    case ENOMEM:
    case EAGAIN:
      status = KVIO_STATUS_OUT_OF_MEMORY;
      meaning =
          "out of memory, or part of the range is no longer mapped (memory freed under the "
          "pool?)";
      break;
    default: meaning = "an answer madvise(2) does not document for this advice"; break;
  }
  return fail(status,
              "prefaulting region %zu (%llu bytes at 0x%llx): madvise(MADV_POPULATE_WRITE) "
              "failed: %s: %s",
              index, ull(bytes), ull(address), meaning, std::strerror(error));
}

}  // namespace

kvio_status prefaultPool(const PoolImpl& pool) {
  if (pool.memoryKind != KVIO_MEMORY_HOST) return KVIO_STATUS_OK;  // backed at allocation
  for (size_t r = 0; r < pool.regions.size(); ++r) {
    KVIO_RETURN_IF_ERROR(prefaultRegion(r, pool.regions[r].address, pool.regions[r].bytes,
                                        pool.allocation != nullptr));
  }
  return KVIO_STATUS_OK;
}

}  // namespace kvio
