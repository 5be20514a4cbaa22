// auto_stand_ins.cpp: an 'auto' executor handle with counting cpu stand-ins for its candidates.
#ifndef KVIO_TESTS_AUTO_STAND_INS_HPP_
#define KVIO_TESTS_AUTO_STAND_INS_HPP_

#include <cstdint>

namespace kvio_test {

/// An 'auto' executor (a C ABI handle; close it with kvio_executor_close) whose kernel and
/// direct candidates are cpu executors counting the jobs they run into *kernelJobs and
/// *directJobs (and, given directPlans, the plans the direct candidate makes); default
/// calibration.
uint64_t standInAutoExecutor(int* kernelJobs, int* directJobs, int* directPlans = nullptr);

}  // namespace kvio_test

#endif  // KVIO_TESTS_AUTO_STAND_INS_HPP_
