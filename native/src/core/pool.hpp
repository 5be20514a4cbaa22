// A pool as the core sees it: its spec, its affine layout bound to memory, the memory regions
// it covers and, when kvio allocated it, the allocation itself (shared with in-flight
// transfers so that closing a pool never frees memory under a copy).
#ifndef KVIO_CORE_POOL_HPP_
#define KVIO_CORE_POOL_HPP_

#include <cstdint>
#include <memory>
#include <vector>

#include "kvio/kvio.h"
#include "kvio/layout.hpp"

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

struct PoolImpl {
  kvio_pool_spec spec{};
  LayoutStrides strides;
  std::vector<uint64_t> layerBase;  // [c * num_layers + l]
  std::vector<MemoryRegion> regions;
  std::shared_ptr<HostAllocation> allocation;
  AffineLayout layout;

  int32_t components() const { return componentCount(spec.kind); }
  int64_t tokens() const { return spec.num_pages * spec.page_size; }
  /// Fills `layout` from spec, strides and layerBase.
  void bindLayout();
};

}  // namespace kvio

#endif  // KVIO_CORE_POOL_HPP_
