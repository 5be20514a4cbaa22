// The 'auto' io backend's executor: it owns its candidates' executors (kernel, direct and
// staged, all on one device stream; where there is no GPU, cpu, with kernel_ascend where there is
// an NPU) and gives each transfer to the one chooseAuto or chooseWithoutGpu (auto_choice.hpp)
// picks. The backend registry (backends.cpp) creates it,
// through the GPU backend's creation function where a device is usable; it is generic over its
// candidates, so the dispatch is tested on the host with cpu executors standing in (auto_test).
#ifndef KVIO_CORE_AUTO_EXECUTOR_HPP_
#define KVIO_CORE_AUTO_EXECUTOR_HPP_

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "auto_choice.hpp"
#include "executor.hpp"

namespace kvio {

/// The thresholds an auto executor chooses by, read on every submit without a lock: a sequence
/// lock. A writer (writers are serialised by the caller) makes the sequence odd, stores the
/// values, makes it even again; a reader retries while the sequence is odd or changed under it,
/// so it sees one stored set whole, never a mix of two.
class PublishedThresholds {
 public:
  explicit PublishedThresholds(const AutoThresholds& initial) { store(initial); }
  void store(const AutoThresholds& thresholds);
  AutoThresholds load() const;

 private:
  std::atomic<uint64_t> sequence_{0};
  std::atomic<uint64_t> directRowBytes_{0};
  std::atomic<uint64_t> directRowBytesOverlap_{0};
  std::atomic<uint64_t> directCopyBytesOverlap_{0};
  std::atomic<uint64_t> stagedMinBytes_{0};
};

class AutoExecutor : public Executor {
 public:
  struct Candidate {
    int32_t ioBackend = -1;  // the KVIO_BACKEND_* reported for transfers it runs
    std::unique_ptr<Executor> executor;
  };
  /// Candidates by AutoPick. Either kernel and direct (staged optional), sharing one stream, or
  /// cpu (kernel_ascend optional: transfers of Ascend device memory go to it). They are destroyed
  /// in reverse pick order after draining (direct before kernel, so a candidate may use a stream
  /// another one owns: pass the owner as kernel).
  AutoExecutor(std::array<Candidate, kAutoPicks> candidates, AutoCalibration calibration);
  ~AutoExecutor() override;

  int32_t threads() const override;
  void submit(std::shared_ptr<Job> job) override;
  void drain() override;
  /// Chooses, and has the chosen candidate prepare the job. Where a row of the plan could reach
  /// the direct crossover, it plans the transfer once (direct's prepare), summarises the plan and
  /// chooses from it: direct runs that plan, staged builds its chunks from it (prepareFromPlan:
  /// no second plan), and for the kernel it is dropped and the kernel prepares its layout job.
  /// Otherwise it chooses without a plan and the chosen candidate's prepare does all (staged's
  /// plans then). Sets job->ioBackend.
  kvio_status prepare(const Transfer& transfer, Job* job, Prepared* out) const override;
  bool marksStart() const override;
  /// For a job given to the cpu candidate, its inline path (small transfers done in submit),
  /// after the NPU candidate's earlier jobs (orderAfterTheOther).
  bool runInline(Job& job) override;
  /// Device-resident indices go to the kernel candidate; UNSUPPORTED without a GPU.
  kvio_status acceptDeviceIndices() const override;
  kvio_status checkDeviceIndices(const int64_t* src, const int64_t* dst,
                                 int64_t count) const override;
  /// With a GPU: OK when any candidate moves these kinds (the union), else the first
  /// candidate's reason. Without: the answer of the candidate these kinds go to.
  kvio_status acceptMemory(MemoryPlace src, MemoryPlace dst) const override;
  /// The first candidate's that has one (the GPU candidates' shared stream, the NPU candidate's
  /// stream and events).
  bool nativeHandle(NativeHandle kind, uint64_t* out) const override;
  /// The kernel candidate's launch shape (its backend table's setLaunch); UNSUPPORTED without a
  /// GPU.
  kvio_status setKernelLaunch(int32_t ctaBudget, int32_t warpsPerCta);

  AutoCalibration calibration() const;
  void setCalibration(AutoCalibration calibration);

 private:
  Executor* candidate(AutoPick pick) const {
    return candidates_[static_cast<size_t>(pick)].executor.get();
  }
  /// The GPU candidates (kernel, direct, staged) are present.
  bool onGpu() const { return candidate(AutoPick::kKernel) != nullptr; }
  /// The cpu candidate (without a GPU), else nullptr.
  Executor* cpu() const { return candidate(AutoPick::kCpu); }
  /// What this executor runs, for messages ("kernel, direct or staged on a GPU", ...).
  const char* runs() const;
  /// Without a GPU the candidates run apart (host threads, an NPU stream): a job for one of
  /// them after jobs given to the other first waits until those are done (drain), so that the
  /// transfers of this executor still run in submission order (a backup into pinned host pages
  /// on the NPU, then a cpu copy of those pages). On a GPU the candidates share one stream.
  /// Called under order_, which a submit holds until its job is queued on its candidate: a drain
  /// by another thread then covers every job whose candidate was recorded before it.
  void orderAfterTheOther(const Job& job);

  int32_t lastBackend_ = -1;  // the candidate of the latest job (without a GPU), under order_
  // Without a GPU: held from recording a job's candidate until the job is queued there (a submit)
  // or its earlier jobs of the other candidate are drained (an inline run, which completes before
  // it returns). Else thread X could record the NPU for job A, thread Y then record cpu and drain
  // the NPU before A is queued there, and X's next job, for cpu, would find cpu recorded and run
  // before A completes.
  std::mutex order_;

  std::array<Candidate, kAutoPicks> candidates_;
  mutable std::mutex mutex_;  // guards calibration_ and serialises stores to thresholds_
  AutoCalibration calibration_;
  PublishedThresholds thresholds_;  // calibration_'s thresholds, for prepare (no lock)
};

/// Where the first-use measurement (auto_measure.cpp) allocates its pools.
struct AutoMeasureTarget {
  int32_t deviceKind = -1;  // the device memory kind (KVIO_MEMORY_*): set by the GPU backend
  int32_t hostKind = KVIO_MEMORY_HOST_PINNED;
  int32_t device = 0;
  uint64_t bytesPerRun = 8 << 20;  // about this much per timed transfer (8 to 4096 rows)
};

/// One row size of the sweep: the best time of each candidate.
struct AutoMeasurement {
  uint64_t rowBytes;
  double kernelSeconds;
  double directSeconds;
};

/// The smallest measured row size from which direct is at least as fast as `kernelShare` times
/// the kernel (its bandwidth scaled by kernelShare) at every larger size measured (points in
/// increasing row size); UINT64_MAX ("never") if none.
uint64_t autoCrossover(const std::vector<AutoMeasurement>& points, double kernelShare = 1.0);

/// The share of its idle bandwidth the kernel kept beside a compute load that fills the GPU
/// (H200, first run, docs/benchmarks.md: 8.1 of 48.1 GB/s), while direct kept all of its own:
/// the sweep (measured idle) sets direct_copy_bytes_overlap where direct reaches this share of
/// the kernel. Each of the sweep's rows is one engine copy, so its row sizes are copy sizes.
constexpr double kKernelShareBesideCompute = 0.17;

/// The slots the sweep moves (the same on both sides) for `count` rows: every other slot of
/// 2 * count, the last first. Descending, so that no two rows of the plan form a 2-D copy (the
/// planner joins rows that advance on both sides at any pitch, and a 2-D copy of many rows is
/// the copy engine's fast case): each row is one engine copy, as scattered tokens are.
std::vector<int64_t> autoSweepSlots(int64_t count);

/// Bytes one timed transfer of the sweep moves at this row size.
uint64_t autoMeasuredBytes(const AutoMeasureTarget& target, uint64_t rowBytes);

/// Runs the sweep on *executor (an AutoExecutor with kernel and direct candidates), which is
/// registered under a temporary handle meanwhile, and sets its direct_row_bytes to the measured
/// crossover and its direct_copy_bytes_overlap to the crossover against kKernelShareBesideCompute
/// of the kernel, the figures in its source. On failure its calibration is unchanged (and the
/// executor's creation fails with the sweep's error: createCudaAutoExecutor).
kvio_status measureAutoCalibration(std::unique_ptr<Executor>* executor,
                                   const AutoMeasureTarget& target);

/// `status` of creating one of an auto executor's candidates; a failure's message is prefixed
/// with "creating an 'auto' executor: ", so it names the executor the caller asked for before the
/// candidate that refused.
kvio_status asAutoCandidate(kvio_status status);

}  // namespace kvio

#endif  // KVIO_CORE_AUTO_EXECUTOR_HPP_
