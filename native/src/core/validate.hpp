// Validation of a transfer before any byte moves: geometry of both pools, layer ranges,
// index bounds, duplicate destination slots and source/destination overlap within one pool.
// On success it yields the plan request and index runs the planner takes.
#ifndef KVIO_CORE_VALIDATE_HPP_
#define KVIO_CORE_VALIDATE_HPP_

#include <vector>

#include "planner.hpp"
#include "pool.hpp"

namespace kvio {

kvio_status validateTransfer(const PoolImpl& src, const PoolImpl& dst,
                             const kvio_transfer_desc& desc, PlanRequest* request,
                             std::vector<IndexRun>* runs);

/// Every run within its pools: [src, src + length) < srcTokens, and the same for dst. The index
/// arrays were checked already, but are read again to make the runs (a caller may change them in
/// between: its own race, which must not become a copy outside the pools).
kvio_status checkRunsInPools(const std::vector<IndexRun>& runs, int64_t srcTokens,
                             int64_t dstTokens);

/// The checks of the two pools that need no index, num_indices or index array (kinds, row
/// geometry, layer ranges, pools sharing memory): for kvio_check_transfer of an empty transfer.
kvio_status validateTransferPools(const PoolImpl& src, const PoolImpl& dst,
                                  const kvio_transfer_desc& desc);

/// The checks that do not read indices: for index arrays in device memory, which the kernel
/// bounds-checks itself (see kvio_submit_device_indices).
kvio_status validateDeviceTransfer(const PoolImpl& src, const PoolImpl& dst,
                                   const kvio_transfer_desc& desc);

}  // namespace kvio

#endif  // KVIO_CORE_VALIDATE_HPP_
