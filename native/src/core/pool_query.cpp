// The pool queries of the C ABI (component bytes of a spec, a pool's spec, regions and memory
// kind) and kvio_pool_copy, which moves bytes between a pool region and host memory
// synchronously, through the memory services of the pool's kind.
#include <cstring>

#include "entry.hpp"
#include "pool_args.hpp"

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

kvio_status kvio_pool_region(uint64_t pool_handle, int64_t region, uint64_t* address_out,
                             uint64_t* bytes_out, int64_t* num_regions_out) {
  return withObject(pools(), pool_handle, "pool", [&](PoolImpl& pool) -> kvio_status {
    KVIO_RETURN_IF_ERROR(checkRegion(pool, region));  // before any output is written
    if (num_regions_out != nullptr) *num_regions_out = static_cast<int64_t>(pool.regions.size());
    if (address_out != nullptr) *address_out = pool.regions[static_cast<size_t>(region)].address;
    if (bytes_out != nullptr) *bytes_out = pool.regions[static_cast<size_t>(region)].bytes;
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_pool_get_spec(uint64_t pool_handle, kvio_pool_spec* spec_out) {
  return withObject(pools(), pool_handle, "pool", spec_out, "spec_out", [&](PoolImpl& pool) {
    *spec_out = pool.spec;
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_pool_memory(uint64_t pool_handle, int32_t* memory_kind_out, int32_t* device_out) {
  return withObject(pools(), pool_handle, "pool", [&](PoolImpl& pool) {
    if (memory_kind_out != nullptr) *memory_kind_out = pool.memoryKind;
    if (device_out != nullptr) *device_out = pool.device;
    return KVIO_STATUS_OK;
  });
}

kvio_status kvio_pool_prefault(uint64_t pool_handle) {
  // The pool is held meanwhile: closing it frees nothing under the touch.
  return withObject(pools(), pool_handle, "pool",
                    [&](PoolImpl& pool) -> kvio_status { return prefaultPool(pool); });
}

kvio_status kvio_pool_copy(uint64_t pool_handle, int64_t region, uint64_t offset,
                           uint64_t host_address, uint64_t bytes, int32_t direction) {
  return guarded([&]() -> kvio_status {
    if (direction != KVIO_COPY_POOL_TO_HOST && direction != KVIO_COPY_HOST_TO_POOL) {
      return fail(KVIO_STATUS_INVALID_ARGUMENT,
                  "direction %d is not valid (0 = pool to host, 1 = host to pool)", direction);
    }
    // The pool is held meanwhile: closing it frees nothing under the copy.
    return withObject(pools(), pool_handle, "pool", [&](PoolImpl& pool) -> kvio_status {
      KVIO_RETURN_IF_ERROR(checkRegion(pool, region));
      const MemoryRegion& r = pool.regions[static_cast<size_t>(region)];
      if (offset > r.bytes || bytes > r.bytes - offset) {
        return fail(KVIO_STATUS_OUT_OF_RANGE,
                    "bytes [%llu, %llu + %llu) are outside region %lld of the pool, which has %llu "
                    "bytes (valid: offset + bytes <= %llu)",
                    static_cast<unsigned long long>(offset),
                    static_cast<unsigned long long>(offset), static_cast<unsigned long long>(bytes),
                    static_cast<long long>(region), static_cast<unsigned long long>(r.bytes),
                    static_cast<unsigned long long>(r.bytes));
      }
      if (bytes == 0) return KVIO_STATUS_OK;
      KVIO_RETURN_IF_ERROR(checkAddress("host_address", -1, host_address, bytes));
      const uint64_t poolAddress = r.address + offset;
      const bool toHost = direction == KVIO_COPY_POOL_TO_HOST;
      if (isDeviceMemory(pool.memoryKind)) {
        return memoryOpsFor(pool.memoryKind)
            .copy(pool.memoryKind, pool.device, poolAddress, host_address, bytes, toHost);
      }
      void* poolPointer = reinterpret_cast<void*>(poolAddress);
      void* hostPointer = reinterpret_cast<void*>(host_address);
      std::memmove(toHost ? hostPointer : poolPointer, toHost ? poolPointer : hostPointer, bytes);
      return KVIO_STATUS_OK;
    });
  });
}

}  // extern "C"
