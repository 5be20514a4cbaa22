// The pool constructors of the C ABI: the four ways to make a pool (allocate, wrap one buffer,
// wrap one buffer per component, wrap a per-layer pointer table), each checking its own
// arguments and then describing the memory to openPool(), the one constructor. Queries and
// kvio_pool_copy are in pool_query.cpp, closing in pool_close.cpp.
#include <algorithm>
#include <numeric>
#include <vector>

#include "guard.hpp"
#include "handles.hpp"
#include "pool_args.hpp"

namespace kvio {
namespace {

// A pool's memory, as a constructor found it: where each (component, layer) starts, the
// regions it covers, and who owns it (kvio's host allocation or device `owner`; none when
// wrapped).
struct PoolMemory {
  int32_t kind = KVIO_MEMORY_HOST;
  int32_t device = -1;
  std::vector<uint64_t> layerBase;  // [layerTableIndex(num_layers, c, l)]
  std::vector<MemoryRegion> regions;
  std::shared_ptr<HostAllocation> allocation;
  std::shared_ptr<void> owner;
};

// The one pool constructor: binds the layout to the memory, adopts or registers the memory for
// its kind, and hands out the handle.
kvio_status openPool(const kvio_pool_spec& spec, const LayoutStrides& strides, PoolMemory memory,
                     uint64_t* out) {
  auto pool = std::make_shared<PoolImpl>();
  pool->spec = spec;
  pool->strides = strides;
  pool->layerBase = std::move(memory.layerBase);
  pool->regions = std::move(memory.regions);
  pool->allocation = std::move(memory.allocation);
  if (pool->allocation == nullptr && memory.owner == nullptr) {
    // Wrapped memory: where it lies in another pool's kvio allocation, hold that allocation.
    pool->borrowed = holdAllocatedMemory(memory.kind, memory.device, pool->regions);
  }
  pool->bindLayout();
  KVIO_RETURN_IF_ERROR(pools().checkRoom());  // before registering the caller's memory
  KVIO_RETURN_IF_ERROR(pool->bindMemory(memory.kind, memory.device, std::move(memory.owner)));
  // Refused (no pool handle left): the pool goes with its memory, as after a failed bind.
  uint64_t handle = 0;
  KVIO_RETURN_IF_ERROR(pools().add(std::move(pool), &handle));
  try {
    listForClose(handle);
  } catch (const std::bad_alloc&) {
    std::shared_ptr<PoolImpl> opened;
    pools().remove(handle, "pool", &opened);
    throw;  // guarded(): OUT_OF_MEMORY, and the pool goes with its memory
  }
  *out = handle;
  return KVIO_STATUS_OK;
}

// Layer starts of a pool whose components are separate buffers at `componentBases`.
std::vector<uint64_t> componentLayers(const kvio_pool_spec& spec, const LayoutStrides& strides,
                                      const uint64_t* componentBases) {
  const int32_t components = componentCount(spec.kind);
  std::vector<uint64_t> layerBase(static_cast<size_t>(components * spec.num_layers));
  for (int32_t c = 0; c < components; ++c) {
    for (int64_t l = 0; l < spec.num_layers; ++l) {
      layerBase[static_cast<size_t>(layerTableIndex(spec.num_layers, c, l))] =
          componentBases[c] + static_cast<uint64_t>(l * strides.strideL);
    }
  }
  return layerBase;
}

// The checks every wrap begins with, in this order: pool_out, the memory kind and device, the
// caller's array of buffer addresses (named `addressesName`; none for a single buffer), the spec.
// Then *memory is of that kind and device, with no owner (the memory is the caller's).
kvio_status beginWrap(const kvio_pool_spec* spec, int32_t memoryKind, int32_t device,
                      const void* addresses, const char* addressesName, const uint64_t* poolOut,
                      LayoutStrides* strides, PoolMemory* memory) {
  KVIO_RETURN_IF_ERROR(checkOut(poolOut, "pool_out"));
  KVIO_RETURN_IF_ERROR(checkMemoryKind(memoryKind, device));
  if (addressesName != nullptr) KVIO_RETURN_IF_ERROR(checkOut(addresses, addressesName));
  KVIO_RETURN_IF_ERROR(checkSpec(spec, strides));
  memory->kind = memoryKind;
  memory->device = device;
  return KVIO_STATUS_OK;
}

// INVALID_ARGUMENT when the caller's buffers of `bytesEach` are smaller than a `what` needs.
kvio_status checkBytesEach(uint64_t bytesEach, int64_t needed, const char* what) {
  if (bytesEach < static_cast<uint64_t>(needed)) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT,
                "bytes_each %llu is too small: each %s needs %lld bytes",
                static_cast<unsigned long long>(bytesEach), what, static_cast<long long>(needed));
  }
  return KVIO_STATUS_OK;
}

// Adds the caller's buffer at [address, +bytes) to the memory's regions, once checked; the
// argument is `name`, or `name`[index] for index >= 0.
kvio_status addRegion(const char* name, int64_t index, uint64_t address, uint64_t bytes,
                      PoolMemory* memory) {
  KVIO_RETURN_IF_ERROR(checkAddress(name, index, address, bytes));
  memory->regions.push_back({address, bytes});
  return KVIO_STATUS_OK;
}

// INVALID_ARGUMENT when two of the caller's buffers overlap (regions[i] is `arrayName`[i]): the
// layout model takes a pool's buffers to be distinct memory, so the slot overlap check of a
// transfer within one pool (validate.cpp) would miss layers that share bytes. Sorted by address,
// with the buffer reaching furthest among those before: O(n log n) for large layer tables.
kvio_status checkDistinctBuffers(const char* arrayName, const std::vector<MemoryRegion>& regions) {
  std::vector<size_t> order(regions.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return regions[a].address < regions[b].address ||
           (regions[a].address == regions[b].address && a < b);
  });
  size_t furthest = order.empty() ? 0 : order[0];
  for (size_t k = 1; k < order.size(); ++k) {
    const MemoryRegion& r = regions[order[k]];
    const MemoryRegion& f = regions[furthest];
    if (f.address + f.bytes > r.address) {
      const size_t later = std::max(furthest, order[k]);
      const size_t earlier = std::min(furthest, order[k]);
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "%s[%zu] (0x%llx, %llu bytes) overlaps %s[%zu] (0x%llx, %llu bytes): the "
                  "buffers of one pool must be distinct memory",
                  arrayName, later, static_cast<unsigned long long>(regions[later].address),
                  static_cast<unsigned long long>(regions[later].bytes), arrayName, earlier,
                  static_cast<unsigned long long>(regions[earlier].address),
                  static_cast<unsigned long long>(regions[earlier].bytes));
    }
    if (r.address + r.bytes > f.address + f.bytes) furthest = order[k];
  }
  return KVIO_STATUS_OK;
}

}  // namespace
}  // namespace kvio

using namespace kvio;

extern "C" {

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
    PoolMemory memory;
    memory.kind = memory_kind;
    memory.device = device;
    uint64_t address = 0;
    KVIO_RETURN_IF_ERROR(pools().checkRoom());  // before allocating
    if (memory_kind == KVIO_MEMORY_HOST) {
      KVIO_RETURN_IF_ERROR(HostAllocation::create(total, &memory.allocation));
      address = memory.allocation->address();
      noteAllocatedMemory(memory_kind, device, address, total, memory.allocation);
    } else {
      KVIO_RETURN_IF_ERROR(
          memoryOpsFor(memory_kind).allocate(memory_kind, device, total, &address, &memory.owner));
      noteAllocatedMemory(memory_kind, device, address, total, memory.owner);
    }
    uint64_t bases[AffineLayout::kMaxComponents];
    for (int32_t c = 0; c < components; ++c) bases[c] = address + c * componentBytes;
    memory.layerBase = componentLayers(*spec, strides, bases);
    memory.regions.push_back({address, total});
    return openPool(*spec, strides, std::move(memory), pool_out);
  });
}

kvio_status kvio_pool_wrap(const kvio_pool_spec* spec, uint64_t address, uint64_t size_bytes,
                           uint64_t* pool_out) {
  return kvio_pool_wrap_memory(spec, KVIO_MEMORY_HOST, -1, address, size_bytes, pool_out);
}

kvio_status kvio_pool_wrap_memory(const kvio_pool_spec* spec, int32_t memory_kind, int32_t device,
                                  uint64_t address, uint64_t size_bytes, uint64_t* pool_out) {
  return guarded([&]() -> kvio_status {
    LayoutStrides strides;
    PoolMemory memory;
    KVIO_RETURN_IF_ERROR(
        beginWrap(spec, memory_kind, device, nullptr, nullptr, pool_out, &strides, &memory));
    const int32_t components = componentCount(spec->kind);
    const uint64_t needed = static_cast<uint64_t>(strides.componentBytes) * components;
    if (size_bytes < needed) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "size_bytes %llu is too small: this spec needs %llu bytes (%d components x %lld)",
                  static_cast<unsigned long long>(size_bytes),
                  static_cast<unsigned long long>(needed), components,
                  static_cast<long long>(strides.componentBytes));
    }
    KVIO_RETURN_IF_ERROR(addRegion("address", -1, address, size_bytes, &memory));
    uint64_t bases[AffineLayout::kMaxComponents];
    for (int32_t c = 0; c < components; ++c) bases[c] = address + c * strides.componentBytes;
    memory.layerBase = componentLayers(*spec, strides, bases);
    return openPool(*spec, strides, std::move(memory), pool_out);
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
    LayoutStrides strides;
    PoolMemory memory;
    KVIO_RETURN_IF_ERROR(beginWrap(spec, memory_kind, device, addresses, "component_addresses",
                                   pool_out, &strides, &memory));
    const int32_t components = componentCount(spec->kind);
    if (num_components != components) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "num_components is %d but a %s pool has %d components", num_components,
                  spec->kind == KVIO_KIND_MHA ? "mha" : "mla", components);
    }
    KVIO_RETURN_IF_ERROR(checkBytesEach(bytes_each, strides.componentBytes, "component"));
    for (int32_t c = 0; c < components; ++c) {
      KVIO_RETURN_IF_ERROR(addRegion("component_addresses", c, addresses[c], bytes_each, &memory));
    }
    KVIO_RETURN_IF_ERROR(checkDistinctBuffers("component_addresses", memory.regions));
    memory.layerBase = componentLayers(*spec, strides, addresses);
    return openPool(*spec, strides, std::move(memory), pool_out);
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
    LayoutStrides strides;
    PoolMemory memory;
    KVIO_RETURN_IF_ERROR(beginWrap(spec, memory_kind, device, table, "layer_addresses", pool_out,
                                   &strides, &memory));
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
    KVIO_RETURN_IF_ERROR(checkBytesEach(bytes_each, strides.strideL, "layer buffer"));
    memory.layerBase.assign(table, table + num_entries);
    for (int64_t i = 0; i < num_entries; ++i) {
      KVIO_RETURN_IF_ERROR(addRegion("layer_addresses", i, table[i], bytes_each, &memory));
    }
    KVIO_RETURN_IF_ERROR(checkDistinctBuffers("layer_addresses", memory.regions));
    return openPool(*spec, strides, std::move(memory), pool_out);
  });
}

}  // extern "C"
