// The C ABI's objects (pools, executors, transfers) behind 64-bit handles, and the submit
// path: look up handles, validate, plan, hand the job to the executor. Every entry point
// catches everything: no exception crosses the C ABI.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <iterator>
#include <mutex>
#include <new>
#include <unordered_map>

#include "diagnostics.hpp"
#include "error.hpp"
#include "executor.hpp"
#include "kvio/kvio.h"
#include "planner.hpp"
#include "pool.hpp"
#include "validate.hpp"

namespace kvio {
namespace {

struct ExecutorImpl {
  int32_t backend;
  std::unique_ptr<Executor> executor;
};

// Handles carry their object type in the top byte, so a handle of the wrong type is named as
// such instead of being looked up in the wrong table.
enum HandleType : uint64_t {
  kPoolHandle = 0x6b01,
  kExecutorHandle = 0x6b02,
  kTransferHandle = 0x6b03
};

const char* typeName(uint64_t type) {
  switch (type) {
    case kPoolHandle: return "pool";
    case kExecutorHandle: return "executor";
    case kTransferHandle: return "transfer";
    default: return "unknown";
  }
}

template <class T>
class Registry {
 public:
  explicit Registry(HandleType type) : type_(type) {}

  uint64_t add(std::shared_ptr<T> object) {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t handle = (static_cast<uint64_t>(type_) << 48) | next_++;
    objects_.emplace(handle, std::move(object));
    return handle;
  }

  kvio_status get(uint64_t handle, const char* argument, std::shared_ptr<T>* out) {
    KVIO_RETURN_IF_ERROR(checkType(handle, argument));
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = objects_.find(handle);
    if (it == objects_.end()) return closed(handle, argument);
    *out = it->second;
    return KVIO_STATUS_OK;
  }

  int64_t size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int64_t>(objects_.size());
  }

  /// True for a handle of this type that this registry handed out (open or closed since).
  bool issued(uint64_t handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t number = handle & ((uint64_t{1} << 48) - 1);
    return (handle >> 48) == type_ && number != 0 && number < next_;
  }

  kvio_status remove(uint64_t handle, const char* argument, std::shared_ptr<T>* out) {
    KVIO_RETURN_IF_ERROR(checkType(handle, argument));
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = objects_.find(handle);
    if (it == objects_.end()) return closed(handle, argument);
    *out = std::move(it->second);
    objects_.erase(it);
    return KVIO_STATUS_OK;
  }

 private:
  kvio_status checkType(uint64_t handle, const char* argument) const {
    if (handle == 0)
      return fail(KVIO_STATUS_INVALID_ARGUMENT, "%s is 0 (no %s)", argument, typeName(type_));
    const uint64_t type = handle >> 48;
    if (type != type_) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT, "%s 0x%llx is not a %s handle (it is a %s handle)",
                  argument, static_cast<unsigned long long>(handle), typeName(type_),
                  typeName(type));
    }
    return KVIO_STATUS_OK;
  }
  kvio_status closed(uint64_t handle, const char* argument) const {
    return fail(KVIO_STATUS_CLOSED, "%s 0x%llx is closed (or was never opened)", argument,
                static_cast<unsigned long long>(handle));
  }

  const HandleType type_;
  std::mutex mutex_;
  std::unordered_map<uint64_t, std::shared_ptr<T>> objects_;
  uint64_t next_ = 1;
};

Registry<PoolImpl>& pools() {
  static Registry<PoolImpl>* r = new Registry<PoolImpl>(kPoolHandle);  // lives until exit
  return *r;
}
Registry<ExecutorImpl>& executors() {
  static Registry<ExecutorImpl>* r = new Registry<ExecutorImpl>(kExecutorHandle);
  return *r;
}
Registry<TransferState>& transfers() {
  static Registry<TransferState>* r = new Registry<TransferState>(kTransferHandle);
  return *r;
}

// Pools closed while transfers still used them, until kvio_pool_close_wait reports their memory
// released (entries whose memory was released are pruned as the table grows).
class ClosingPools {
 public:
  void add(uint64_t handle, std::shared_ptr<PoolUsage> usage) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (pools_.size() >= pruneAt_) {
      for (auto it = pools_.begin(); it != pools_.end();) {
        it = it->second->released() ? pools_.erase(it) : std::next(it);
      }
      pruneAt_ = std::max<size_t>(64, 2 * pools_.size());
    }
    pools_[handle] = std::move(usage);
  }
  std::shared_ptr<PoolUsage> find(uint64_t handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pools_.find(handle);
    return it == pools_.end() ? nullptr : it->second;
  }
  void erase(uint64_t handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    pools_.erase(handle);
  }

 private:
  std::mutex mutex_;
  std::unordered_map<uint64_t, std::shared_ptr<PoolUsage>> pools_;
  size_t pruneAt_ = 64;
};

ClosingPools& closingPools() {
  static ClosingPools* c = new ClosingPools();  // lives until exit
  return *c;
}

// After the handle was removed: transfers found done drop their references, and when none uses
// the pool any more, dropping `pool` releases its memory (and ends kvio's registration) here.
void closePool(uint64_t handle, std::shared_ptr<PoolImpl> pool) {
  const std::shared_ptr<PoolUsage> usage = pool->usage();
  usage->pending();
  pool.reset();
  if (!usage->released()) closingPools().add(handle, usage);
}

// Waits until the memory of closed pool `handle` is released, or until the deadline.
kvio_status waitReleased(uint64_t handle, int64_t timeoutNs) {
  if (timeoutNs > (int64_t{1} << 60)) timeoutNs = -1;  // decades: no limit (and no overflow)
  const std::shared_ptr<PoolUsage> usage = closingPools().find(handle);
  if (usage == nullptr) return KVIO_STATUS_OK;  // released when it was closed, or reported
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::nanoseconds(timeoutNs < 0 ? 0 : timeoutNs);
  for (;;) {
    if (usage->released()) {
      closingPools().erase(handle);
      return KVIO_STATUS_OK;
    }
    const std::vector<std::shared_ptr<TransferState>> pending = usage->pending();
    const auto now = std::chrono::steady_clock::now();
    if (usage->released()) continue;
    if (timeoutNs >= 0 && now >= deadline) {
      return fail(KVIO_STATUS_TIMEOUT,
                  "pool 0x%llx is closed but %zu transfer(s) submitted with it were still running "
                  "after %lld ns, so kvio still uses its memory; wait again "
                  "(kvio_pool_close_wait) before freeing it",
                  static_cast<unsigned long long>(handle), pending.size(),
                  static_cast<long long>(timeoutNs));
    }
    if (pending.empty()) {
      // No transfer left, but the memory is being released by another thread (or a submit
      // racing with the close still holds the pool): wait for the release briefly.
      auto until = now + std::chrono::milliseconds(1);
      if (timeoutNs >= 0 && deadline < until) until = deadline;
      usage->waitReleased(until);
      continue;
    }
    const int64_t left =
        timeoutNs < 0
            ? -1
            : std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now).count();
    pending.front()->wait(left);
  }
}

template <class F>
kvio_status guarded(F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(KVIO_STATUS_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return fail(KVIO_STATUS_INTERNAL, "internal error: %s", e.what());
  } catch (...) {
    return fail(KVIO_STATUS_INTERNAL, "internal error (unknown exception)");
  }
}

kvio_status checkOut(const void* out, const char* name) {
  if (out == nullptr) return fail(KVIO_STATUS_INVALID_ARGUMENT, "%s is null", name);
  return KVIO_STATUS_OK;
}

// Builds a pool whose components are separate buffers at `bases`.
kvio_status makePool(const kvio_pool_spec* spec, const uint64_t* componentBases,
                     std::shared_ptr<PoolImpl>* out) {
  auto pool = std::make_shared<PoolImpl>();
  pool->spec = *spec;
  KVIO_RETURN_IF_ERROR(layoutStrides(*spec, &pool->strides));
  const int32_t components = pool->components();
  pool->layerBase.resize(static_cast<size_t>(components * spec->num_layers));
  for (int32_t c = 0; c < components; ++c) {
    for (int64_t l = 0; l < spec->num_layers; ++l) {
      pool->layerBase[static_cast<size_t>(c * spec->num_layers + l)] =
          componentBases[c] + static_cast<uint64_t>(l * pool->strides.strideL);
    }
  }
  pool->bindLayout();
  *out = std::move(pool);
  return KVIO_STATUS_OK;
}

kvio_status checkSpec(const kvio_pool_spec* spec, LayoutStrides* strides) {
  if (spec == nullptr) return fail(KVIO_STATUS_INVALID_ARGUMENT, "spec is null");
  return layoutStrides(*spec, strides);
}

kvio_status checkAddress(const char* what, uint64_t address, uint64_t bytes) {
  if (address == 0) return fail(KVIO_STATUS_INVALID_ARGUMENT, "%s address is 0 (null)", what);
  if (address + bytes < address) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT, "%s [0x%llx, +%llu) wraps around the address space",
                what, static_cast<unsigned long long>(address),
                static_cast<unsigned long long>(bytes));
  }
  return KVIO_STATUS_OK;
}

kvio_status checkMemoryKind(int32_t kind, int32_t device) {
  if (kind < 0 || kind >= KVIO_MEMORY_COUNT) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT,
                "memory_kind %d is not valid (0 = host, 1 = host_pinned, 2 = cuda_device, 3 = "
                "ascend_device, 4 = ascend_host_pinned)",
                kind);
  }
  if (kind != KVIO_MEMORY_HOST && device < 0) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT, "device %d is not a device ordinal (>= 0)", device);
  }
  return KVIO_STATUS_OK;
}

MemoryPlace placeOf(const PoolImpl& pool) {
  return {pool.memoryKind, pool.device};
}

// Binds the layout of a pool to the device-accessible layer table.
void deviceLayout(const PoolImpl& pool, std::vector<uint64_t>* table, AffineLayout* out) {
  *table = pool.deviceLayerBase.empty() ? pool.layerBase : pool.deviceLayerBase;
  *out = pool.layout;
  out->layerBase = table->data();
}

// The launch shape limits of the kernel backend (kernel_executor.cpp checks the same).
kvio_status checkLaunch(int32_t ctaBudget, int32_t warpsPerCta) {
  if (ctaBudget > 65535 || warpsPerCta > 32) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT,
                "launch shape %d CTAs x %d warps is not valid (CTA budget 1 to 65535, warps per "
                "CTA 1 to 32; 0 for the executor's setting)",
                ctaBudget, warpsPerCta);
  }
  return KVIO_STATUS_OK;
}

// kvio_transfer_timing: whether transfers submitted now record their times.
std::atomic<bool> transferTiming{false};

kvio_status submit(uint64_t executorHandle, const kvio_transfer_desc& desc, bool deviceIndices,
                   uint64_t* out, int32_t ctaBudget = 0, int32_t warpsPerCta = 0) {
  const int64_t submitNs =
      transferTiming.load(std::memory_order_relaxed) ? TransferState::monotonicNs() : 0;
  KVIO_RETURN_IF_ERROR(checkOut(out, "transfer_out"));
  KVIO_RETURN_IF_ERROR(checkLaunch(ctaBudget, warpsPerCta));
  std::shared_ptr<ExecutorImpl> executor;
  std::shared_ptr<PoolImpl> src, dst;
  KVIO_RETURN_IF_ERROR(executors().get(executorHandle, "executor", &executor));
  KVIO_RETURN_IF_ERROR(pools().get(desc.src_pool, "src_pool", &src));
  KVIO_RETURN_IF_ERROR(pools().get(desc.dst_pool, "dst_pool", &dst));
  Executor& ex = *executor->executor;
  KVIO_RETURN_IF_ERROR(ex.acceptMemory(placeOf(*src), placeOf(*dst)));
  auto job = std::make_shared<Job>();
  uint64_t bytes = 0;
  if (deviceIndices) {
    if (!ex.acceptsDeviceIndices()) {
      return fail(KVIO_STATUS_UNSUPPORTED,
                  "device-resident indices need the 'kernel' io backend (this executor is '%s')",
                  kvio_name(KVIO_NAME_BACKEND, executor->backend));
    }
    KVIO_RETURN_IF_ERROR(validateDeviceTransfer(*src, *dst, desc));
    KVIO_RETURN_IF_ERROR(ex.checkDeviceIndices(desc.src_indices, desc.dst_indices));
  } else {
    PlanRequest request;
    thread_local std::vector<IndexRun> runs;  // reused: no allocation per transfer
    KVIO_RETURN_IF_ERROR(validateTransfer(*src, *dst, desc, &request, &runs));
    if (ex.usesPlan()) {
      job->plan = takePlanStorage();
      planTransfer(request, runs, &job->plan);
      for (const kvio_copy2d& c : job->plan) bytes += c.width * c.height;
    }
  }
  if (!ex.usesPlan()) {
    LayoutJob& l = job->layout;
    deviceLayout(*src, &l.srcTable, &l.src);
    deviceLayout(*dst, &l.dstTable, &l.dst);
    l.srcIndices = desc.src_indices;
    l.dstIndices = desc.dst_indices;
    l.indicesOnDevice = deviceIndices;
    l.count = desc.num_indices;
    l.srcLayerStart = desc.src_layer_start;
    l.dstLayerStart = desc.dst_layer_start;
    l.numLayers = desc.num_layers;
    l.ctaBudget = ctaBudget > 0 ? ctaBudget : 0;
    l.warpsPerCta = warpsPerCta > 0 ? warpsPerCta : 0;
    bytes = static_cast<uint64_t>(desc.num_indices) * static_cast<uint64_t>(desc.num_layers) *
            static_cast<uint64_t>(src->components()) *
            static_cast<uint64_t>(src->layout.rowBytes());
  }
  job->srcPlace = placeOf(*src);
  job->dstPlace = placeOf(*dst);
  job->srcPool = src.get();
  job->dstPool = dst.get();
  job->state = std::make_shared<TransferState>(bytes);
  TransferState::Shape shape;
  shape.ioBackend = executor->backend;
  shape.srcLayout = src->spec.layout;
  shape.dstLayout = dst->spec.layout;
  shape.srcMemory = src->memoryKind;
  shape.dstMemory = dst->memoryKind;
  shape.components = src->components();
  shape.numIndices = desc.num_indices;
  shape.numLayers = desc.num_layers;
  shape.copies = ex.usesPlan() ? static_cast<int64_t>(job->plan.size()) : 0;
  shape.launches = ex.usesPlan() ? 0 : 1;
  shape.submitNs = submitNs;
  job->state->describe(shape);
  src->usage()->add(job->state);
  if (dst != src) dst->usage()->add(job->state);
  job->state->holdPools(std::move(src), std::move(dst));
  // The registry keeps the state alive until the caller closes the handle it has not seen yet.
  TransferState* const state = job->state.get();
  *out = transfers().add(job->state);
  ex.submit(std::move(job));
  if (!ex.marksStart()) state->markStarted();
  return KVIO_STATUS_OK;
}

kvio_status cudaExecutor(uint64_t handle, std::shared_ptr<ExecutorImpl>* out) {
  KVIO_RETURN_IF_ERROR(executors().get(handle, "executor", out));
  uint64_t stream = 0;
  if (!(*out)->executor->cudaStream(&stream)) {
    return fail(KVIO_STATUS_UNSUPPORTED, "executor 0x%llx is a '%s' executor, not a CUDA one",
                static_cast<unsigned long long>(handle),
                kvio_name(KVIO_NAME_BACKEND, (*out)->backend));
  }
  return KVIO_STATUS_OK;
}

}  // namespace

void liveHandles(int64_t* pools_, int64_t* executors_, int64_t* transfers_) {
  *pools_ = pools().size();
  *executors_ = executors().size();
  *transfers_ = transfers().size();
}

}  // namespace kvio

using namespace kvio;

extern "C" {

kvio_status kvio_pool_component_bytes(const kvio_pool_spec* spec, uint64_t* bytes_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(bytes_out, "bytes_out"));
    LayoutStrides strides;
    KVIO_RETURN_IF_ERROR(checkSpec(spec, &strides));
    *bytes_out = static_cast<uint64_t>(strides.componentBytes);
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_pool_allocate(const kvio_pool_spec* spec, uint64_t* pool_out) {
  return kvio_pool_allocate_memory(spec, KVIO_MEMORY_HOST, -1, pool_out);
}

kvio_status kvio_pool_allocate_memory(const kvio_pool_spec* spec, int32_t memory_kind,
                                      int32_t device, uint64_t* pool_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(pool_out, "pool_out"));
    LayoutStrides strides;
    KVIO_RETURN_IF_ERROR(checkSpec(spec, &strides));
    KVIO_RETURN_IF_ERROR(checkMemoryKind(memory_kind, device));
    const uint64_t componentBytes = static_cast<uint64_t>(strides.componentBytes);
    const int32_t components = componentCount(spec->kind);
    const uint64_t total = componentBytes * components;
    uint64_t address = 0;
    std::shared_ptr<HostAllocation> allocation;
    std::shared_ptr<void> owner;
    if (memory_kind == KVIO_MEMORY_HOST) {
      KVIO_RETURN_IF_ERROR(HostAllocation::create(total, &allocation));
      address = allocation->address();
    } else {
      KVIO_RETURN_IF_ERROR(
          memoryOpsFor(memory_kind).allocate(memory_kind, device, total, &address, &owner));
    }
    uint64_t bases[AffineLayout::kMaxComponents];
    for (int32_t c = 0; c < components; ++c) bases[c] = address + c * componentBytes;
    std::shared_ptr<PoolImpl> pool;
    KVIO_RETURN_IF_ERROR(makePool(spec, bases, &pool));
    pool->allocation = allocation;
    pool->regions.push_back({address, total});
    KVIO_RETURN_IF_ERROR(pool->bindMemory(memory_kind, device, std::move(owner)));
    *pool_out = pools().add(std::move(pool));
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_pool_wrap(const kvio_pool_spec* spec, uint64_t address, uint64_t size_bytes,
                           uint64_t* pool_out) {
  return kvio_pool_wrap_memory(spec, KVIO_MEMORY_HOST, -1, address, size_bytes, pool_out);
}

kvio_status kvio_pool_wrap_memory(const kvio_pool_spec* spec, int32_t memory_kind, int32_t device,
                                  uint64_t address, uint64_t size_bytes, uint64_t* pool_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(pool_out, "pool_out"));
    KVIO_RETURN_IF_ERROR(checkMemoryKind(memory_kind, device));
    LayoutStrides strides;
    KVIO_RETURN_IF_ERROR(checkSpec(spec, &strides));
    const int32_t components = componentCount(spec->kind);
    const uint64_t needed = static_cast<uint64_t>(strides.componentBytes) * components;
    if (size_bytes < needed) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "size_bytes %llu is too small: this spec needs %llu bytes (%d components x %lld)",
                  static_cast<unsigned long long>(size_bytes),
                  static_cast<unsigned long long>(needed), components,
                  static_cast<long long>(strides.componentBytes));
    }
    KVIO_RETURN_IF_ERROR(checkAddress("pool", address, size_bytes));
    uint64_t bases[AffineLayout::kMaxComponents];
    for (int32_t c = 0; c < components; ++c) bases[c] = address + c * strides.componentBytes;
    std::shared_ptr<PoolImpl> pool;
    KVIO_RETURN_IF_ERROR(makePool(spec, bases, &pool));
    pool->regions.push_back({address, size_bytes});
    KVIO_RETURN_IF_ERROR(pool->bindMemory(memory_kind, device, nullptr));
    *pool_out = pools().add(std::move(pool));
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_pool_wrap_components(const kvio_pool_spec* spec, const uint64_t* addresses,
                                      int32_t num_components, uint64_t bytes_each,
                                      uint64_t* pool_out) {
  return kvio_pool_wrap_components_memory(spec, KVIO_MEMORY_HOST, -1, addresses, num_components,
                                          bytes_each, pool_out);
}

kvio_status kvio_pool_wrap_components_memory(const kvio_pool_spec* spec, int32_t memory_kind,
                                             int32_t device, const uint64_t* addresses,
                                             int32_t num_components, uint64_t bytes_each,
                                             uint64_t* pool_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(pool_out, "pool_out"));
    KVIO_RETURN_IF_ERROR(checkMemoryKind(memory_kind, device));
    KVIO_RETURN_IF_ERROR(checkOut(addresses, "component_addresses"));
    LayoutStrides strides;
    KVIO_RETURN_IF_ERROR(checkSpec(spec, &strides));
    const int32_t components = componentCount(spec->kind);
    if (num_components != components) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "num_components is %d but a %s pool has %d components", num_components,
                  spec->kind == KVIO_KIND_MHA ? "mha" : "mla", components);
    }
    if (bytes_each < static_cast<uint64_t>(strides.componentBytes)) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "bytes_each %llu is too small: each component needs %lld bytes",
                  static_cast<unsigned long long>(bytes_each),
                  static_cast<long long>(strides.componentBytes));
    }
    for (int32_t c = 0; c < components; ++c) {
      KVIO_RETURN_IF_ERROR(checkAddress("component", addresses[c], bytes_each));
    }
    std::shared_ptr<PoolImpl> pool;
    KVIO_RETURN_IF_ERROR(makePool(spec, addresses, &pool));
    for (int32_t c = 0; c < components; ++c) pool->regions.push_back({addresses[c], bytes_each});
    KVIO_RETURN_IF_ERROR(pool->bindMemory(memory_kind, device, nullptr));
    *pool_out = pools().add(std::move(pool));
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_pool_wrap_layer_table(const kvio_pool_spec* spec, const uint64_t* table,
                                       int64_t num_entries, uint64_t bytes_each,
                                       uint64_t* pool_out) {
  return kvio_pool_wrap_layer_table_memory(spec, KVIO_MEMORY_HOST, -1, table, num_entries,
                                           bytes_each, pool_out);
}

kvio_status kvio_pool_wrap_layer_table_memory(const kvio_pool_spec* spec, int32_t memory_kind,
                                              int32_t device, const uint64_t* table,
                                              int64_t num_entries, uint64_t bytes_each,
                                              uint64_t* pool_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(pool_out, "pool_out"));
    KVIO_RETURN_IF_ERROR(checkMemoryKind(memory_kind, device));
    KVIO_RETURN_IF_ERROR(checkOut(table, "layer_addresses"));
    LayoutStrides strides;
    KVIO_RETURN_IF_ERROR(checkSpec(spec, &strides));
    if (spec->layout != KVIO_LAYOUT_LAYER_FIRST) {
      return fail(KVIO_STATUS_UNSUPPORTED,
                  "per-layer pointer tables hold one buffer per layer, so the layout must be "
                  "layer_first, got %s",
                  kvio_name(KVIO_NAME_LAYOUT, spec->layout));
    }
    const int32_t components = componentCount(spec->kind);
    const int64_t expected = components * spec->num_layers;
    if (num_entries != expected) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "num_entries is %lld but the table needs %d components x %lld layers = %lld",
                  static_cast<long long>(num_entries), components,
                  static_cast<long long>(spec->num_layers), static_cast<long long>(expected));
    }
    if (bytes_each < static_cast<uint64_t>(strides.strideL)) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "bytes_each %llu is too small: each layer buffer needs %lld bytes",
                  static_cast<unsigned long long>(bytes_each),
                  static_cast<long long>(strides.strideL));
    }
    auto pool = std::make_shared<PoolImpl>();
    pool->spec = *spec;
    pool->strides = strides;
    pool->layerBase.assign(table, table + num_entries);
    for (int64_t i = 0; i < num_entries; ++i) {
      KVIO_RETURN_IF_ERROR(checkAddress("layer buffer", table[i], bytes_each));
      pool->regions.push_back({table[i], bytes_each});
    }
    pool->bindLayout();
    KVIO_RETURN_IF_ERROR(pool->bindMemory(memory_kind, device, nullptr));
    *pool_out = pools().add(std::move(pool));
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_pool_region(uint64_t pool_handle, int64_t region, uint64_t* address_out,
                             uint64_t* bytes_out, int64_t* num_regions_out) {
  return guarded([&]() -> kvio_status {
    std::shared_ptr<PoolImpl> pool;
    KVIO_RETURN_IF_ERROR(pools().get(pool_handle, "pool", &pool));
    const int64_t count = static_cast<int64_t>(pool->regions.size());
    if (num_regions_out != nullptr) *num_regions_out = count;
    if (region < 0 || region >= count) {
      return fail(KVIO_STATUS_OUT_OF_RANGE, "region %lld is out of range (valid: 0 to %lld)",
                  static_cast<long long>(region), static_cast<long long>(count - 1));
    }
    if (address_out != nullptr) *address_out = pool->regions[static_cast<size_t>(region)].address;
    if (bytes_out != nullptr) *bytes_out = pool->regions[static_cast<size_t>(region)].bytes;
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_pool_get_spec(uint64_t pool_handle, kvio_pool_spec* spec_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(spec_out, "spec_out"));
    std::shared_ptr<PoolImpl> pool;
    KVIO_RETURN_IF_ERROR(pools().get(pool_handle, "pool", &pool));
    *spec_out = pool->spec;
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_pool_close(uint64_t pool_handle) {
  return guarded([&]() -> kvio_status {
    std::shared_ptr<PoolImpl> pool;
    KVIO_RETURN_IF_ERROR(pools().remove(pool_handle, "pool", &pool));
    closePool(pool_handle, std::move(pool));  // memory goes with the last transfer using it
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_pool_close_wait(uint64_t pool_handle, int64_t timeout_ns) {
  return guarded([&]() -> kvio_status {
    std::shared_ptr<PoolImpl> pool;
    const kvio_status removed = pools().remove(pool_handle, "pool", &pool);
    if (removed == KVIO_STATUS_OK) {
      closePool(pool_handle, std::move(pool));
    } else if (removed != KVIO_STATUS_CLOSED) {
      return removed;  // not a pool handle
    } else if (!pools().issued(pool_handle)) {
      return fail(KVIO_STATUS_CLOSED, "pool 0x%llx was never opened",
                  static_cast<unsigned long long>(pool_handle));
    }
    return waitReleased(pool_handle, timeout_ns);
  });
}

kvio_status kvio_debug_live_host_registrations(int64_t* count_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(count_out, "count_out"));
    *count_out = liveHostRegistrations.load();
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_executor_create(int32_t io_backend, int32_t threads, uint64_t* executor_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(executor_out, "executor_out"));
    KVIO_RETURN_IF_ERROR(kvio_backend_available(io_backend));
    auto impl = std::make_shared<ExecutorImpl>();
    impl->backend = io_backend;
    KVIO_RETURN_IF_ERROR(backendOps(io_backend)->create(threads, &impl->executor));
    *executor_out = executors().add(std::move(impl));
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_executor_threads(uint64_t executor_handle, int32_t* threads_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(threads_out, "threads_out"));
    std::shared_ptr<ExecutorImpl> executor;
    KVIO_RETURN_IF_ERROR(executors().get(executor_handle, "executor", &executor));
    *threads_out = executor->executor->threads();
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_executor_close(uint64_t executor_handle) {
  return guarded([&]() -> kvio_status {
    std::shared_ptr<ExecutorImpl> executor;
    KVIO_RETURN_IF_ERROR(executors().remove(executor_handle, "executor", &executor));
    executor->executor->drain();
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_executor_create_cuda(int32_t io_backend, int32_t device, uint64_t stream,
                                      int32_t cta_budget, int32_t warps_per_cta,
                                      uint64_t* executor_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(executor_out, "executor_out"));
    KVIO_RETURN_IF_ERROR(kvio_backend_available(io_backend));
    const BackendOps* ops = backendOps(io_backend);
    if (ops->createCuda == nullptr) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "io backend '%s' is not a CUDA backend (CUDA backends: kernel, direct)",
                  kvio_name(KVIO_NAME_BACKEND, io_backend));
    }
    if (device < 0) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT, "device %d is not a CUDA device ordinal (>= 0)",
                  device);
    }
    CudaExecutorConfig config;
    config.device = device;
    config.stream = stream;
    config.ctaBudget = cta_budget;
    config.warpsPerCta = warps_per_cta;
    auto impl = std::make_shared<ExecutorImpl>();
    impl->backend = io_backend;
    KVIO_RETURN_IF_ERROR(ops->createCuda(config, &impl->executor));
    *executor_out = executors().add(std::move(impl));
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_executor_create_ascend(int32_t device, uint64_t stream, uint64_t* executor_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(executor_out, "executor_out"));
    KVIO_RETURN_IF_ERROR(kvio_backend_available(KVIO_BACKEND_KERNEL_ASCEND));
    if (device < 0) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT, "device %d is not an Ascend device ordinal (>= 0)",
                  device);
    }
    auto impl = std::make_shared<ExecutorImpl>();
    impl->backend = KVIO_BACKEND_KERNEL_ASCEND;
    KVIO_RETURN_IF_ERROR(
        backendOps(KVIO_BACKEND_KERNEL_ASCEND)->createAscend(device, stream, &impl->executor));
    *executor_out = executors().add(std::move(impl));
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_executor_set_launch(uint64_t executor_handle, int32_t cta_budget,
                                     int32_t warps_per_cta) {
  return guarded([&]() -> kvio_status {
    std::shared_ptr<ExecutorImpl> executor;
    KVIO_RETURN_IF_ERROR(executors().get(executor_handle, "executor", &executor));
    return executor->executor->setLaunch(cta_budget, warps_per_cta);
  });
}

kvio_status kvio_executor_cuda_stream(uint64_t executor_handle, uint64_t* stream_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(stream_out, "stream_out"));
    std::shared_ptr<ExecutorImpl> executor;
    KVIO_RETURN_IF_ERROR(cudaExecutor(executor_handle, &executor));
    executor->executor->cudaStream(stream_out);
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_submit_launch(uint64_t executor, const kvio_transfer_desc* desc,
                               int32_t cta_budget, int32_t warps_per_cta, uint64_t* transfer_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(desc, "desc"));
    return submit(executor, *desc, false, transfer_out, cta_budget, warps_per_cta);
  });
}

kvio_status kvio_submit_device_indices(uint64_t executor, const kvio_transfer_desc* desc,
                                       uint64_t* transfer_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(desc, "desc"));
    return submit(executor, *desc, true, transfer_out);
  });
}

kvio_status kvio_transfer_cuda_event(uint64_t transfer, uint64_t* event_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(event_out, "event_out"));
    std::shared_ptr<TransferState> state;
    KVIO_RETURN_IF_ERROR(transfers().get(transfer, "transfer", &state));
    std::shared_ptr<DeviceCompletion> completion = state->deviceCompletion();
    if (completion == nullptr || completion->isAscend()) {
      return fail(KVIO_STATUS_UNSUPPORTED,
                  "transfer 0x%llx has no CUDA event (it did not run on a CUDA executor)",
                  static_cast<unsigned long long>(transfer));
    }
    *event_out = completion->nativeEvent();
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_transfer_ascend_event(uint64_t transfer, uint64_t* event_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(event_out, "event_out"));
    std::shared_ptr<TransferState> state;
    KVIO_RETURN_IF_ERROR(transfers().get(transfer, "transfer", &state));
    std::shared_ptr<DeviceCompletion> completion = state->deviceCompletion();
    if (completion == nullptr || !completion->isAscend()) {
      return fail(KVIO_STATUS_UNSUPPORTED,
                  "transfer 0x%llx has no Ascend event (it did not run on a kernel_ascend "
                  "executor, or it failed when it was submitted)",
                  static_cast<unsigned long long>(transfer));
    }
    *event_out = completion->nativeEvent();
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_executor_ascend_stream(uint64_t executor_handle, uint64_t* stream_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(stream_out, "stream_out"));
    std::shared_ptr<ExecutorImpl> executor;
    KVIO_RETURN_IF_ERROR(executors().get(executor_handle, "executor", &executor));
    if (!executor->executor->ascendStream(stream_out)) {
      return fail(KVIO_STATUS_UNSUPPORTED,
                  "executor 0x%llx is a '%s' executor, not a kernel_ascend one",
                  static_cast<unsigned long long>(executor_handle),
                  kvio_name(KVIO_NAME_BACKEND, executor->backend));
    }
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_pool_memory(uint64_t pool_handle, int32_t* memory_kind_out, int32_t* device_out) {
  return guarded([&]() -> kvio_status {
    std::shared_ptr<PoolImpl> pool;
    KVIO_RETURN_IF_ERROR(pools().get(pool_handle, "pool", &pool));
    if (memory_kind_out != nullptr) *memory_kind_out = pool->memoryKind;
    if (device_out != nullptr) *device_out = pool->device;
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_pool_copy(uint64_t pool_handle, int64_t region, uint64_t offset,
                           uint64_t host_address, uint64_t bytes, int32_t direction) {
  return guarded([&]() -> kvio_status {
    if (direction != KVIO_COPY_POOL_TO_HOST && direction != KVIO_COPY_HOST_TO_POOL) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "direction %d is not valid (0 = pool to host, 1 = host to pool)", direction);
    }
    std::shared_ptr<PoolImpl> pool;  // held: closing the pool meanwhile frees nothing under us
    KVIO_RETURN_IF_ERROR(pools().get(pool_handle, "pool", &pool));
    const int64_t count = static_cast<int64_t>(pool->regions.size());
    if (region < 0 || region >= count) {
      return fail(KVIO_STATUS_OUT_OF_RANGE, "region %lld is out of range (valid: 0 to %lld)",
                  static_cast<long long>(region), static_cast<long long>(count - 1));
    }
    const MemoryRegion& r = pool->regions[static_cast<size_t>(region)];
    if (offset > r.bytes || bytes > r.bytes - offset) {
      return fail(KVIO_STATUS_OUT_OF_RANGE,
                  "bytes [%llu, %llu + %llu) are outside region %lld of the pool, which has %llu "
                  "bytes (valid: offset + bytes <= %llu)",
                  static_cast<unsigned long long>(offset), static_cast<unsigned long long>(offset),
                  static_cast<unsigned long long>(bytes), static_cast<long long>(region),
                  static_cast<unsigned long long>(r.bytes),
                  static_cast<unsigned long long>(r.bytes));
    }
    if (bytes == 0) return KVIO_STATUS_OK;
    KVIO_RETURN_IF_ERROR(checkAddress("host", host_address, bytes));
    const uint64_t poolAddress = r.address + offset;
    const bool toHost = direction == KVIO_COPY_POOL_TO_HOST;
    if (pool->memoryKind == KVIO_MEMORY_CUDA_DEVICE ||
        pool->memoryKind == KVIO_MEMORY_ASCEND_DEVICE) {
      return memoryOpsFor(pool->memoryKind)
          .copy(pool->memoryKind, pool->device, poolAddress, host_address, bytes, toHost);
    }
    void* poolPointer = reinterpret_cast<void*>(poolAddress);
    void* hostPointer = reinterpret_cast<void*>(host_address);
    std::memmove(toHost ? hostPointer : poolPointer, toHost ? poolPointer : hostPointer, bytes);
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_submit(uint64_t executor, const kvio_transfer_desc* desc, uint64_t* transfer_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(desc, "desc"));
    return submit(executor, *desc, false, transfer_out);
  });
}

kvio_status kvio_submit_args(uint64_t executor, uint64_t src_pool, uint64_t dst_pool,
                             const int64_t* src_indices, const int64_t* dst_indices,
                             int64_t num_indices, int64_t src_layer_start, int64_t dst_layer_start,
                             int64_t num_layers, uint64_t* transfer_out) {
  return guarded([&]() -> kvio_status {
    const kvio_transfer_desc desc{src_pool,    dst_pool,        src_indices,     dst_indices,
                                  num_indices, src_layer_start, dst_layer_start, num_layers};
    return submit(executor, desc, false, transfer_out);
  });
}

kvio_status kvio_transfer_wait(uint64_t transfer, int64_t timeout_ns) {
  return guarded([&]() -> kvio_status {
    std::shared_ptr<TransferState> state;
    KVIO_RETURN_IF_ERROR(transfers().get(transfer, "transfer", &state));
    if (!state->wait(timeout_ns)) {
      return fail(KVIO_STATUS_TIMEOUT, "transfer not done after %lld ns",
                  static_cast<long long>(timeout_ns));
    }
    const kvio_status status = state->status();
    if (status != KVIO_STATUS_OK) return fail(status, "%s", state->message().c_str());
    return KVIO_STATUS_OK;
  });
}

int32_t kvio_transfer_is_done(uint64_t transfer) {
  std::shared_ptr<TransferState> state;
  const kvio_status status =
      guarded([&]() -> kvio_status { return transfers().get(transfer, "transfer", &state); });
  if (status != KVIO_STATUS_OK) return -status;
  return state->isDone() ? 1 : 0;
}

kvio_status kvio_transfer_bytes(uint64_t transfer, uint64_t* bytes_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(bytes_out, "bytes_out"));
    std::shared_ptr<TransferState> state;
    KVIO_RETURN_IF_ERROR(transfers().get(transfer, "transfer", &state));
    *bytes_out = state->bytes();
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_transfer_get_info(uint64_t transfer, kvio_transfer_info* info_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(info_out, "info_out"));
    std::shared_ptr<TransferState> state;
    KVIO_RETURN_IF_ERROR(transfers().get(transfer, "transfer", &state));
    const TransferState::Shape& shape = state->shape();
    kvio_transfer_info info{};
    info.io_backend = shape.ioBackend;
    info.src_layout = shape.srcLayout;
    info.dst_layout = shape.dstLayout;
    info.src_memory = shape.srcMemory;
    info.dst_memory = shape.dstMemory;
    info.components = shape.components;
    info.num_indices = shape.numIndices;
    info.num_layers = shape.numLayers;
    info.bytes = state->bytes();
    info.copies = shape.copies;
    info.launches = shape.launches;
    info.submit_ns = shape.submitNs;
    info.start_ns = state->startNs();
    info.done = state->isDone() ? 1 : 0;  // polls a device completion, as kvio_transfer_is_done
    info.end_ns = state->endNs();
    info.status = info.done ? state->status() : KVIO_STATUS_OK;
    *info_out = info;
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_transfer_timing(int32_t enabled) {
  return guarded([&]() -> kvio_status {
    transferTiming.store(enabled != 0, std::memory_order_relaxed);
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_transfer_close(uint64_t transfer) {
  return guarded([&]() -> kvio_status {
    std::shared_ptr<TransferState> state;
    return transfers().remove(transfer, "transfer", &state);
  });
}

kvio_status kvio_plan(const kvio_transfer_desc* desc, kvio_copy2d* copies_out, int64_t capacity,
                      int64_t* count_out) {
  return guarded([&]() -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkOut(desc, "desc"));
    KVIO_RETURN_IF_ERROR(checkOut(count_out, "count_out"));
    std::shared_ptr<PoolImpl> src, dst;
    KVIO_RETURN_IF_ERROR(pools().get(desc->src_pool, "src_pool", &src));
    KVIO_RETURN_IF_ERROR(pools().get(desc->dst_pool, "dst_pool", &dst));
    PlanRequest request;
    std::vector<IndexRun> runs;
    KVIO_RETURN_IF_ERROR(validateTransfer(*src, *dst, *desc, &request, &runs));
    std::vector<kvio_copy2d> plan;
    planTransfer(request, runs, &plan);
    *count_out = static_cast<int64_t>(plan.size());
    if (copies_out != nullptr) {
      const size_t n =
          std::min<size_t>(plan.size(), capacity > 0 ? static_cast<size_t>(capacity) : 0);
      std::copy(plan.begin(), plan.begin() + static_cast<std::ptrdiff_t>(n), copies_out);
    }
    return KVIO_STATUS_OK;
  });
}

}  // extern "C"
