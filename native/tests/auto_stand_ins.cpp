// Stand-ins for auto_dispatch_test: an 'auto' executor whose kernel and direct (and optionally
// staged) candidates are cpu executors that count the jobs they run (this file sees the core's
// headers; the test itself sees only the C ABI, kvio.hpp and the oracle, whose names clash with
// the core's).
#include "auto_stand_ins.hpp"

#include "auto_stand.hpp"
#include "core/auto_executor.hpp"
#include "core/handles.hpp"

namespace kvio_test {

uint64_t standInAutoExecutor(int* kernelJobs, int* directJobs, int* directPlans,
                             StagedCounts* staged, LaunchSeen* kernelLaunch) {
  std::array<kvio::AutoExecutor::Candidate, kvio::kAutoPicks> c;
  c[0] = {KVIO_BACKEND_KERNEL, std::make_unique<Stand>(kernelJobs, -1, nullptr, kernelLaunch)};
  c[1] = {KVIO_BACKEND_DIRECT, std::make_unique<Stand>(directJobs, -1, directPlans)};
  if (staged != nullptr) {
    c[2] = {KVIO_BACKEND_STAGED,
            std::make_unique<StagedStand>(&staged->jobs, &staged->plans, &staged->fromPlan)};
  }
  auto impl = std::make_shared<kvio::ExecutorImpl>();
  impl->backend = KVIO_BACKEND_AUTO;
  impl->executor = std::make_unique<kvio::AutoExecutor>(std::move(c), kvio::AutoCalibration());
  uint64_t handle = 0;
  if (kvio::executors().add(std::move(impl), &handle) != KVIO_STATUS_OK) return 0;
  return handle;
}

}  // namespace kvio_test
