// The launch-shape rule of executors that launch a copy kernel: a CTA budget and warps per CTA,
// each 0 (or less) for the executor's setting. Checked here only: by the core when a transfer
// brings its own shape (kvio_submit_with, kvio_submit_launch; kvio_check_transfer_with)
// and by the kernel and staged executors when their shape is set.
#ifndef KVIO_CORE_LAUNCH_SHAPE_HPP_
#define KVIO_CORE_LAUNCH_SHAPE_HPP_

#include <cstdint>

#include "error.hpp"
#include "kvio/kvio.h"

namespace kvio {

// At most this many thread blocks per launch: the grid's y and z limit (x allows 2^31 - 1), kept
// as one bound that every grid shape the kernels use can take, far above what a copy needs.
constexpr int32_t kMaxCtaBudget = 65535;
constexpr int32_t kMaxWarpsPerCta = 32;  // 1024 threads per CTA

/// INVALID_ARGUMENT when the shape is outside the limits; `zeroMeans` says what 0 or less stands
/// for in the message ("the executor's setting", "the defaults 4 and 16").
inline kvio_status checkLaunchShape(int32_t ctaBudget, int32_t warpsPerCta, const char* zeroMeans) {
  if (ctaBudget > kMaxCtaBudget || warpsPerCta > kMaxWarpsPerCta) {
    return fail(KVIO_STATUS_INVALID_ARGUMENT,
                "launch shape %d CTAs x %d warps is not valid (CTA budget 1 to %d, warps per CTA 1 "
                "to %d; 0 or less for %s)",
                ctaBudget, warpsPerCta, kMaxCtaBudget, kMaxWarpsPerCta, zeroMeans);
  }
  return KVIO_STATUS_OK;
}

}  // namespace kvio

#endif  // KVIO_CORE_LAUNCH_SHAPE_HPP_
