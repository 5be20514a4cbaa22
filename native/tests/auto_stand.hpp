// A stand-in candidate for the 'auto' executor's host tests (auto_test, auto_stand_ins.cpp):
// a cpu executor that counts the jobs it runs. Sees the core's headers.
#ifndef KVIO_TESTS_AUTO_STAND_HPP_
#define KVIO_TESTS_AUTO_STAND_HPP_

#include <gtest/gtest.h>

#include <memory>

#include "core/backends.hpp"
#include "core/error.hpp"
#include "core/executor.hpp"

namespace kvio_test {

/// A cpu executor that counts the jobs it runs (and, given `prepared`, the plans it makes);
/// refuses memory of kind `refuses`.
class Stand : public kvio::Executor {
 public:
  Stand(int* submitted, int32_t refuses = -1, int* prepared = nullptr)
      : submitted_(submitted), prepared_(prepared), refuses_(refuses) {
    EXPECT_EQ(kvio::backendOps(KVIO_BACKEND_CPU)->create(1, &inner_), KVIO_STATUS_OK);
  }
  kvio_status prepare(const kvio::Transfer& transfer, kvio::Job* job,
                      kvio::Prepared* out) const override {
    if (prepared_ != nullptr) ++*prepared_;
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
    return inner_->acceptMemory(src, dst);
  }

 private:
  int* submitted_;
  int* prepared_;
  int32_t refuses_;
  std::unique_ptr<kvio::Executor> inner_;
};

}  // namespace kvio_test

#endif  // KVIO_TESTS_AUTO_STAND_HPP_
