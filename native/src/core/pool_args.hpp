// Argument checks shared by the pool entry points (pool_api.cpp, pool_query.cpp): the spec,
// caller addresses, the memory kind and region numbers. Each failure names the argument.
#ifndef KVIO_CORE_POOL_ARGS_HPP_
#define KVIO_CORE_POOL_ARGS_HPP_

#include <string>

#include "error.hpp"
#include "kvio/kvio.h"
#include "layout.hpp"
#include "names.hpp"
#include "pool.hpp"

namespace kvio {

inline kvio_status checkSpec(const kvio_pool_spec* spec, LayoutStrides* strides) {
  if (spec == nullptr) return fail(KVIO_STATUS_INVALID_ARGUMENT, "spec is null");
  return layoutStrides(*spec, strides);
}

// A caller's buffer [address, +bytes): not null, not wrapping. The argument is `name`, or
// `name`[index] for an entry of an array (index >= 0).
inline kvio_status checkAddress(const char* name, int64_t index, uint64_t address, uint64_t bytes) {
  if (address != 0 && address + bytes >= address) return KVIO_STATUS_OK;
  const std::string argument =
      index < 0 ? std::string(name) : std::string(name) + "[" + std::to_string(index) + "]";
  if (address == 0) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT, "%s is 0 (null)", argument.c_str());
  }
  return fail(KVIO_STATUS_INVALID_ARGUMENT, "%s [0x%llx, +%llu) wraps around the address space",
              argument.c_str(), static_cast<unsigned long long>(address),
              static_cast<unsigned long long>(bytes));
}

inline kvio_status checkMemoryKind(int32_t kind, int32_t device) {
  KVIO_RETURN_IF_ERROR(checkEnumValue(Enumeration::kMemoryKind, kind, "memory_kind"));
  if (kind != KVIO_MEMORY_HOST && device < 0) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT,
                "device %d is not a device ordinal (>= 0): memory of kind '%s' belongs to a "
                "device; pass its ordinal (0 for the first)",
                device, memoryKindName(kind));
  }
  return KVIO_STATUS_OK;
}

inline kvio_status checkRegion(const PoolImpl& pool, int64_t region) {
  const int64_t count = static_cast<int64_t>(pool.regions.size());
  if (region < 0 || region >= count) {
    return fail(KVIO_STATUS_OUT_OF_RANGE, "region %lld is out of range (valid: 0 to %lld)",
                static_cast<long long>(region), static_cast<long long>(count - 1));
  }
  return KVIO_STATUS_OK;
}

}  // namespace kvio

#endif  // KVIO_CORE_POOL_ARGS_HPP_
