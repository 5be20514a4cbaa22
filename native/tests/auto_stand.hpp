// Stand-in candidates for the 'auto' executor's host tests (auto_test, auto_stand_ins.cpp):
// cpu executors that count the jobs they run, and a staged stand-in that moves between host and
// (host memory labelled as) device memory. Sees the core's headers.
#ifndef KVIO_TESTS_AUTO_STAND_HPP_
#define KVIO_TESTS_AUTO_STAND_HPP_

#include <gtest/gtest.h>

#include <memory>

#include "auto_stand_ins.hpp"
#include "core/backends.hpp"
#include "core/error.hpp"
#include "core/executor.hpp"
#include "core/pool.hpp"

namespace kvio_test {

/// A cpu executor that counts the jobs it runs (and, given `prepared`, the plans it makes; given
/// `launch`, the launch shape and mark of the transfers it prepares); refuses memory of kind
/// `refuses` and takes any other (it copies host memory whatever its label, as a device
/// candidate takes the device memory the label stands for).
class Stand : public kvio::Executor {
 public:
  Stand(int* submitted, int32_t refuses = -1, int* prepared = nullptr, LaunchSeen* launch = nullptr)
      : submitted_(submitted), prepared_(prepared), launch_(launch), refuses_(refuses) {
    EXPECT_EQ(kvio::backendOps(KVIO_BACKEND_CPU)->create(1, &inner_), KVIO_STATUS_OK);
  }
  kvio_status prepare(const kvio::Transfer& transfer, kvio::Job* job,
                      kvio::Prepared* out) const override {
    if (prepared_ != nullptr) ++*prepared_;
    if (launch_ != nullptr) {
      ++launch_->prepares;
      launch_->ctaBudget = transfer.ctaBudget;
      launch_->warpsPerCta = transfer.warpsPerCta;
      launch_->overlapsCompute = transfer.overlapsCompute;
    }
    return kvio::Executor::prepare(transfer, job, out);
  }
  int32_t threads() const override { return 1; }
  void submit(std::shared_ptr<kvio::Job> job) override {
    ++*submitted_;
    inner_->submit(std::move(job));
  }
  void drain() override { inner_->drain(); }
  kvio_status acceptMemory(kvio::MemoryPlace src, kvio::MemoryPlace dst) const override {
    if (src.kind == refuses_ || dst.kind == refuses_) {
      return kvio::fail(KVIO_STATUS_UNSUPPORTED, "stand refuses kind %d", refuses_);
    }
    return KVIO_STATUS_OK;
  }

 private:
  int* submitted_;
  int* prepared_;
  LaunchSeen* launch_;
  int32_t refuses_;
  std::unique_ptr<kvio::Executor> inner_;
};

/// The staged candidate's stand-in: a Stand (counting jobs and the plans its own prepare makes)
/// that, like the real staged executor, moves only between host and device memory (in the
/// tests, host memory labelled as an emulated NPU's, which its cpu executor copies as it is) and
/// builds its work from the plan in prepareFromPlan: it keeps the plan for its cpu executor and
/// reports it as one launch (one chunk), counted into *fromPlan, so a test sees that the staged
/// side of prepare ran and what it reported.
class StagedStand : public Stand {
 public:
  StagedStand(int* submitted, int* prepared, int* fromPlan)
      : Stand(submitted, -1, prepared), fromPlan_(fromPlan) {}
  kvio_status prepareFromPlan(const kvio::Transfer& transfer, kvio::Job* job,
                              kvio::Prepared* out) const override {
    if (fromPlan_ != nullptr) ++*fromPlan_;
    out->launches = 1;
    return KVIO_STATUS_OK;
  }
  kvio_status acceptMemory(kvio::MemoryPlace src, kvio::MemoryPlace dst) const override {
    if (kvio::isDeviceMemory(src.kind) == kvio::isDeviceMemory(dst.kind)) {
      return kvio::fail(KVIO_STATUS_UNSUPPORTED, "the staged stand-in moves host<->device only");
    }
    return KVIO_STATUS_OK;
  }

 private:
  int* fromPlan_;
};

}  // namespace kvio_test

#endif  // KVIO_TESTS_AUTO_STAND_HPP_
