// auto_stand_ins.cpp: an 'auto' executor handle with counting cpu stand-ins for its candidates.
#ifndef KVIO_TESTS_AUTO_STAND_INS_HPP_
#define KVIO_TESTS_AUTO_STAND_INS_HPP_

#include <cstdint>

namespace kvio_test {

/// What a staged stand-in counts: the jobs it runs, the plans its own prepare makes, and the
/// times its prepareFromPlan built its work from a plan (its own or the one auto made).
struct StagedCounts {
  int jobs = 0;
  int plans = 0;
  int fromPlan = 0;
};

/// What a kernel stand-in was last asked to prepare: the transfer's launch shape and overlap mark
/// (what the core hands every candidate), and how many transfers it prepared.
struct LaunchSeen {
  int prepares = 0;
  int32_t ctaBudget = -1;
  int32_t warpsPerCta = -1;
  bool overlapsCompute = false;
};

/// An 'auto' executor (a C ABI handle; close it with kvio_executor_close) whose kernel and
/// direct candidates are cpu executors counting the jobs they run into *kernelJobs and
/// *directJobs (and, given directPlans, the plans the direct candidate makes); given `staged`,
/// it also has a staged candidate (auto_stand.hpp: StagedStand) counting into *staged, which
/// moves between host memory and memory labelled as device memory; given kernelLaunch, the
/// kernel stand-in records what it prepares there. Default calibration.
uint64_t standInAutoExecutor(int* kernelJobs, int* directJobs, int* directPlans = nullptr,
                             StagedCounts* staged = nullptr, LaunchSeen* kernelLaunch = nullptr);

}  // namespace kvio_test

#endif  // KVIO_TESTS_AUTO_STAND_INS_HPP_
