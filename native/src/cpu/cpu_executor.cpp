// The CPU backend: runs plans with memcpy on a pool of worker threads. Jobs run in
// submission order, like a stream: the workers share out the pieces of the job at the head of
// the queue, and the next job starts when the last piece of the head job is done. Copies are
// cut into pieces of about `chunk` bytes (rows of a 2-D copy, or spans of a long 1-D copy) so
// that one large copy uses every thread; small copies are grouped into one task. A job small
// enough that a thread handoff would cost more than the copy runs on the submitting thread
// when nothing is queued before it; one up to 8 MiB with nothing before it has the submitting
// thread take tasks too, beside the workers, until none is left to take. Strided 2-D copies
// that lie side by side (the heads of a row, page_head) run row by row across each other.
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "../core/backends.hpp"
#include "../core/diagnostics.hpp"
#include "../core/error.hpp"
#include "../core/executor.hpp"
#include "../core/planner.hpp"

namespace kvio {
namespace {

// Jobs up to this size run on the submitting thread when nothing is queued: a one-page,
// one-layer load (256 KiB for 64 tokens x 2 KiB rows x K and V) measured 31 us inline against
// 54 us through the workers (JMH, 2-core VM), the thread handoff costing more than it saves.
constexpr uint64_t kInlineBytes = 512 * 1024;
// Jobs up to this size with nothing queued before them have the submitting thread copy beside
// the workers until every task is taken (so submit returns within about a millisecond); their
// copy starts at once instead of after a worker's wake-up. A 2 MiB backup (rows of 4 KiB) went
// from about 0.6x to 0.75x memcpy with it (kvio-cli bench, 2-core VM).
constexpr uint64_t kHelpBytes = 8 * 1024 * 1024;
constexpr uint64_t kMinChunk = 64 * 1024;
constexpr uint64_t kMaxChunk = 4 * 1024 * 1024;

// Jobs of at least this many bytes write rows of at least kStreamMinWidth with non-temporal
// stores: the destination of a large backup or load is not read again soon by this core, and
// streaming stores skip the read-for-ownership of every destination line that plain stores
// pay (the gap between a row-by-row gather and one large memcpy, which streams on its own).
// Below 16 MiB the copy mostly stays in the last-level cache, where streaming stores, which go
// to memory, lose: an 8 MiB backup went from about 0.6x to 1.0-1.5x memcpy when the threshold
// moved from 4 to 16 MiB (kvio-cli bench, 2-core VM with a large shared cache).
constexpr uint64_t kStreamMinJobBytes = 16 * 1024 * 1024;
constexpr uint64_t kStreamMinWidth = 512;
// Rows at least this wide that are not streamed go to the C library's memcpy, which picks the
// widest copy this CPU has (AVX-512, rep movsb); the inlined 16-byte blocks below it are
// faster only for short rows, where a call per row costs more than it saves.
constexpr uint64_t kLibraryMinWidth = 512;

void copyRow(char* dst, const char* src, uint64_t n, bool stream) {
#if defined(__SSE2__)
  if (stream && n >= kStreamMinWidth) {
    const uint64_t head = (16 - (reinterpret_cast<uintptr_t>(dst) & 15)) & 15;
    std::memcpy(dst, src, head);
    dst += head;
    src += head;
    n -= head;
    for (; n >= 64; n -= 64, src += 64, dst += 64) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16));
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 32));
      const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 48), d);
    }
  }
#endif
  if (n >= kLibraryMinWidth) {
    std::memcpy(dst, src, n);  // the C library's copy for this CPU (wide vectors, rep movsb)
    return;
  }
  // Short rows: 64-byte blocks of fixed-size copies the compiler inlines, instead of a
  // library call per row.
  for (; n >= 64; n -= 64, src += 64, dst += 64) std::memcpy(dst, src, 64);
  std::memcpy(dst, src, n);
}

// Orders streaming stores before the completion that follows (they are weakly ordered).
void endStreaming(bool stream) {
#if defined(__SSE2__)
  if (stream) _mm_sfence();
#endif
}

void runCopy(const kvio_copy2d& c, bool stream) {
  const char* src = reinterpret_cast<const char*>(c.src);
  char* dst = reinterpret_cast<char*>(c.dst);
  for (uint64_t row = 0; row < c.height; ++row) {
    copyRow(dst + row * c.dst_pitch, src + row * c.src_pitch, c.width, stream);
  }
}

struct Task {
  size_t first;
  size_t last;  // exclusive, into Pending::pieces
};

// Runs a task's copies in order. Scattered short copies are bound by memory latency, so the
// first lines of the copy kPrefetchAhead places ahead are requested before each copy.
constexpr size_t kPrefetchAhead = 8;

// Strips: 2-D copies of the same shape that lie side by side on one side (each starts where
// the one before ends within a row), such as the heads of one token row copied to a layout
// that keeps heads apart (page_head). Run one after the other, each strip's rows are short
// pieces spread over the whole region; run row by row across the strips, that side is read
// (or written) in order, whole rows at a time, which is what the hardware prefetcher follows.
constexpr uint64_t kStripPrefetchRows = 2;

bool continuesStrip(const kvio_copy2d& a, const kvio_copy2d& b, bool bySrc) {
  return a.height > 1 && b.height == a.height && b.width == a.width && b.src_pitch == a.src_pitch &&
         b.dst_pitch == a.dst_pitch &&
         (bySrc ? b.src == a.src + a.width : b.dst == a.dst + a.width);
}

void runStrips(const kvio_copy2d* strips, size_t count, bool stream, bool bySrc) {
  const uint64_t height = strips[0].height;
  for (uint64_t row = 0; row < height; ++row) {
    for (size_t k = 0; k < count; ++k) {
      const kvio_copy2d& c = strips[k];
      if (!bySrc && row + kStripPrefetchRows < height) {
        // Strips side by side on the destination: the source is read a strip at a time, a
        // row apart, which the prefetcher does not follow; ask for it ahead.
        const uint64_t ahead = c.src + (row + kStripPrefetchRows) * c.src_pitch;
        for (uint64_t line = 0; line < c.width; line += 64) {
          __builtin_prefetch(reinterpret_cast<const void*>(ahead + line), 0, 0);
        }
      }
      copyRow(reinterpret_cast<char*>(c.dst + row * c.dst_pitch),
              reinterpret_cast<const char*>(c.src + row * c.src_pitch), c.width, stream);
    }
  }
}

// Sorts a plan of strided 2-D copies by their address on the side with the longer pitch (the
// side whose rows hold several strips), so that strips side by side come one after another.
// Copies of one transfer write distinct bytes, so their order within the job is free. Returns
// which side it sorted by (true: source); false when it left the plan as it was.
bool sortIntoStrips(std::vector<kvio_copy2d>* plan, bool* bySrc) {
  if (plan->size() < 2) return false;
  const kvio_copy2d& first = plan->front();
  const bool strided = std::all_of(plan->begin(), plan->end(), [&first](const kvio_copy2d& c) {
    return c.height > 1 && c.width == first.width && std::max(c.src_pitch, c.dst_pitch) > c.width;
  });
  if (!strided) return false;
  *bySrc = first.src_pitch >= first.dst_pitch;
  const bool src = *bySrc;
  const auto before = [src](const kvio_copy2d& a, const kvio_copy2d& b) {
    return src ? a.src < b.src : a.dst < b.dst;
  };
  // A plan the planner wrote in that order already (strips of a token row one after another)
  // costs one pass instead of a sort.
  if (!std::is_sorted(plan->begin(), plan->end(), before)) {
    std::sort(plan->begin(), plan->end(), before);
  }
  return true;
}

void runTask(const std::vector<kvio_copy2d>& pieces, const Task& task, bool stream, bool strips,
             bool bySrc) {
  for (size_t i = task.first; i < task.last;) {
    size_t end = i + 1;
    if (strips) {
      while (end < task.last && continuesStrip(pieces[end - 1], pieces[end], bySrc)) ++end;
    }
    if (end - i > 1) {
      runStrips(&pieces[i], end - i, stream, bySrc);
      i = end;
      continue;
    }
    if (i + kPrefetchAhead < task.last) {
      const kvio_copy2d& next = pieces[i + kPrefetchAhead];
      __builtin_prefetch(reinterpret_cast<const void*>(next.src), 0, 0);
      __builtin_prefetch(reinterpret_cast<const void*>(next.dst), 1, 0);
    }
    runCopy(pieces[i], stream);
    ++i;
  }
}

struct Pending {
  std::shared_ptr<Job> job;
  std::vector<kvio_copy2d> cut;  // the plan cut into pieces, when some copy was too large
  const std::vector<kvio_copy2d>* pieces = nullptr;  // `cut`, or the job's plan itself
  std::vector<Task> tasks;
  size_t next = 0;
  size_t remaining = 0;
  bool stream = false;
  bool strips = false;  // the plan was sorted into strips (sortIntoStrips)
  bool bySrc = false;
  bool fault = false;         // an injected copy failure (kvio_test_inject_fault): copy nothing
  int64_t holdReleases = -1;  // >= 0: held by an injected kFaultCpuHold until a later release
};

// The injected hold of a job (kFaultCpuHold, test builds only): the release count at its
// submission, and its first task's wait for a later release.
#if KVIO_TESTING
int64_t holdReleases() {
  return cpuHoldReleases();
}
void waitHeld(int64_t releasesAtSubmit) {
  waitForCpuHoldRelease(releasesAtSubmit);
}
#else
int64_t holdReleases() {
  return -1;
}
void waitHeld(int64_t) {}
#endif

// Completes a job: OK, or the injected copy failure, naming the call that failed. Never throws
// (the message of the injected failure is dropped when it cannot be allocated): an exception
// here would leave the executor's counts as they were.
void completeJob(Job& job, bool fault) noexcept {
  if (!kFaultPoints || !fault) {
    job.state->complete(KVIO_STATUS_OK);
    return;
  }
  const kvio_copy2d first = job.plan.empty() ? kvio_copy2d{} : job.plan.front();
  char message[320];
  std::snprintf(message, sizeof message,
                "cpu backend: memcpy of copy 1 of %zu (%llu rows of %llu bytes, to 0x%llx) failed: "
                "fault injected by kvio_test_inject_fault; nothing of this transfer was written",
                job.plan.size(), static_cast<unsigned long long>(first.height),
                static_cast<unsigned long long>(first.width),
                static_cast<unsigned long long>(first.dst));
  try {
    job.state->complete(KVIO_STATUS_BACKEND_ERROR, message);
  } catch (const std::bad_alloc&) {  // the message's string: the status still tells
    job.state->complete(KVIO_STATUS_BACKEND_ERROR);
  }
}

// Calls emit(piece) for each piece of the plan in order: a copy of at most `chunk` bytes whole,
// a larger one cut into rows of a 2-D copy, or spans of a long 1-D copy.
template <class Emit>
void forEachPiece(const std::vector<kvio_copy2d>& plan, uint64_t chunk, Emit emit) {
  for (const kvio_copy2d& c : plan) {
    if (copyBytes(c) <= chunk) {
      emit(c);
    } else if (c.height == 1) {
      for (uint64_t offset = 0; offset < c.width; offset += chunk) {
        kvio_copy2d piece = c;
        piece.src += offset;
        piece.dst += offset;
        piece.width = std::min(chunk, c.width - offset);
        emit(piece);
      }
    } else {
      const uint64_t rows = std::max<uint64_t>(1, chunk / c.width);
      for (uint64_t row = 0; row < c.height; row += rows) {
        kvio_copy2d piece = c;
        piece.src += row * c.src_pitch;
        piece.dst += row * c.dst_pitch;
        piece.height = std::min(rows, c.height - row);
        emit(piece);
      }
    }
  }
}

// Cuts copies larger than `chunk` bytes into pieces (forEachPiece) and groups consecutive
// pieces into tasks of about `chunk` bytes.
void cutIntoTasks(uint64_t chunk, Pending* p) {
  const std::vector<kvio_copy2d>& plan = p->job->plan;
  const bool needsCut = std::any_of(plan.begin(), plan.end(),
                                    [chunk](const kvio_copy2d& c) { return copyBytes(c) > chunk; });
  p->pieces = &plan;
  if (needsCut) {
    // Every copy goes to the cut, whose storage is counted and reserved first: the cut is new
    // with each job, and grown piece by piece a plan of many copies regrew it every time.
    size_t count = 0;
    forEachPiece(plan, chunk, [&count](const kvio_copy2d&) { ++count; });
    p->cut.reserve(count);
    forEachPiece(plan, chunk, [p](const kvio_copy2d& piece) { p->cut.push_back(piece); });
    p->pieces = &p->cut;
  }
  const std::vector<kvio_copy2d>& pieces = *p->pieces;
  uint64_t accumulated = 0;
  size_t first = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    accumulated += copyBytes(pieces[i]);
    if (accumulated >= chunk || i + 1 == pieces.size()) {
      p->tasks.push_back(Task{first, i + 1});
      first = i + 1;
      accumulated = 0;
    }
  }
  p->remaining = p->tasks.size();
}

class CpuExecutor final : public Executor {
 public:
  /// Starts no thread: startWorkers() does, and reports a thread that could not start.
  explicit CpuExecutor(int32_t threads) : threads_(threads) {}

  ~CpuExecutor() override {
    drain();
    stopWorkers();
  }

  /// Starts the worker threads. When one cannot start (std::thread throws std::system_error:
  /// a thread limit of the process or container, no address space for its stack), stops and
  /// joins those started and returns OUT_OF_MEMORY (BACKEND_ERROR for another cause) naming it:
  /// no thread of this executor is left running.
  kvio_status startWorkers() {
    workers_.reserve(static_cast<size_t>(threads_));
    for (int32_t i = 0; i < threads_; ++i) {
      try {
        if constexpr (kFaultPoints) {  // test only: as if the second thread could not start
          if (i == 1 && KVIO_FAULT(kFaultCpuThread)) {
            throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                                    "fault injected by kvio_test_inject_fault");
          }
        }
        workers_.emplace_back([this, i] { workerLoop(i); });
      } catch (const std::system_error& e) {
        stopWorkers();
        const bool resources = e.code() == std::errc::resource_unavailable_try_again ||
                               e.code() == std::errc::not_enough_memory;
        return fail(resources ? KVIO_STATUS_OUT_OF_MEMORY : KVIO_STATUS_BACKEND_ERROR,
                    "cpu backend: could not start io thread %d of %d: %s%s; no executor was "
                    "created and none of its threads is left running",
                    i + 1, threads_, e.what(),
                    resources ? " (a thread limit of the process or container, such as "
                                "RLIMIT_NPROC or pids.max, or no memory for the thread's stack)"
                              : "");
      }
    }
    return KVIO_STATUS_OK;
  }

  int32_t threads() const override { return threads_; }
  bool marksStart() const override { return true; }
  // Host memory only: the other io backends move device memory.
  kvio_status acceptMemory(MemoryPlace src, MemoryPlace dst) const override {
    const MemoryPlace sides[2] = {src, dst};
    for (int i = 0; i < 2; ++i) {
      if (sides[i].kind == KVIO_MEMORY_CUDA_DEVICE) {
        return fail(KVIO_STATUS_UNSUPPORTED,
                    "the %s pool is CUDA device memory (device %d); the cpu backend moves host "
                    "memory only: use the 'kernel', 'direct', 'staged' or 'auto' io backend",
                    i == 0 ? "source" : "destination", sides[i].device);
      }
      if (sides[i].kind == KVIO_MEMORY_ASCEND_DEVICE) {
        return fail(KVIO_STATUS_UNSUPPORTED,
                    "the %s pool is Ascend device memory (device %d); the cpu backend moves host "
                    "memory only: use the 'kernel_ascend' io backend",
                    i == 0 ? "source" : "destination", sides[i].device);
      }
    }
    return KVIO_STATUS_OK;
  }

  bool runInline(Job& job) override {
    const uint64_t bytes = planBytes(job.plan);
    if (bytes > kInlineBytes || !takeInline()) return false;
    runTakenInline(job, KVIO_FAULT(kFaultCpuCopy));  // test only: fails the job in order
    return true;
  }

  void submit(std::shared_ptr<Job> job) override {
    const uint64_t bytes = planBytes(job->plan);
    const bool fault = KVIO_FAULT(kFaultCpuCopy);  // test only: fails the job in order
    // The core tried runInline first; the 'auto' executor submits here directly.
    if (!job->queueOnly && bytes <= kInlineBytes && takeInline()) {
      runTakenInline(*job, fault);
      return;
    }
    auto pending = std::make_shared<Pending>();
    pending->job = std::move(job);
    pending->stream = bytes >= kStreamMinJobBytes;
    pending->fault = fault;
    // Test only: an injected hold, for jobs the submitting thread never copies (over kHelpBytes,
    // or submitted queue-only).
    const bool queueOnly = pending->job->queueOnly;
    if ((bytes > kHelpBytes || queueOnly) && KVIO_FAULT(kFaultCpuHold)) {
      pending->holdReleases = holdReleases();
    }
    const uint64_t chunk =
        std::clamp<uint64_t>(bytes / (static_cast<uint64_t>(threads_) * 4), kMinChunk, kMaxChunk);
    pending->strips = !fault && sortIntoStrips(&pending->job->plan, &pending->bySrc);
    cutIntoTasks(chunk, pending.get());
    if (pending->tasks.empty()) {  // nothing to copy
      completeJob(*pending->job, fault);
      return;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    // Nothing before it: the submitting thread copies too, from now, instead of only waiting
    // for a worker to wake up (a wake-up costs as much as copying a few hundred KiB).
    // Only up to kHelpBytes: submit stays asynchronous for the large copies callers overlap.
    // One atomic step reads that and counts the job: no inline job starts in between.
    queue_.push_back(pending);  // first: if it throws, nothing was counted
    const bool help = busy_.fetch_add(kQueuedJob) == 0 && bytes <= kHelpBytes && !queueOnly;
    lock.unlock();
    work_.notify_all();
    if (!help) return;
    lock.lock();
    while (!queue_.empty() && queue_.front() == pending && runNextTask(lock)) {
    }
  }

  // Only when nothing runs: two threads' inline jobs must not overlap (a conflicting pair
  // would leave a mix of both; found by reliability_test), nor a queued job start under one.
  // busy_ is 0 exactly then; taking it is one atomic exchange, not the queue's lock.
  bool takeInline() {
    uint32_t idle = 0;
    return busy_.compare_exchange_strong(idle, kInlineRunning);
  }

  // Runs a job on the calling thread after takeInline(), then lets queued jobs and drain() go.
  void runTakenInline(Job& job, bool fault) {
    job.state->markStarted();
    if (!fault) {
      bool bySrc = false;
      const bool strips = sortIntoStrips(&job.plan, &bySrc);
      runTask(job.plan, Task{0, job.plan.size()}, false, strips, bySrc);
    }
    completeJob(job, fault);
    const uint32_t after = busy_.fetch_sub(kInlineRunning) - kInlineRunning;
    // A job queued meanwhile waited for this one, and drain() may wait for it: only then the
    // lock and a wake-up (waking idle workers for nothing would cost two context switches per
    // small transfer). Both sides change their atomic before reading the other's (seq_cst),
    // so one of them sees the other: no wake-up is lost.
    if (after != 0 || drainers_.load() != 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (after != 0) work_.notify_all();
      idle_.notify_all();
    }
  }

  void drain() override {
    std::unique_lock<std::mutex> lock(mutex_);
    drainers_.fetch_add(1);  // before reading busy_: see submit's inline path
    idle_.wait(lock, [this] { return busy_.load() == 0; });
    drainers_.fetch_sub(1);
  }

 private:
  void workerLoop(int32_t index) {
    const std::string name = "kvio-cpu-" + std::to_string(index);
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      const auto runnable = [this] {
        return (busy_.load() & kInlineRunning) == 0 && !queue_.empty() &&
               queue_.front()->next < queue_.front()->tasks.size();
      };
      work_.wait(lock, [&] { return stopping_ || runnable(); });
      if (stopping_ && queue_.empty()) return;
      if (!runnable()) continue;
      runNextTask(lock);
    }
  }

  // Runs the next task of the job at the head of the queue (mutex_ held by `lock`, released
  // while copying), and completes the job after its last task. False when it has none left.
  bool runNextTask(std::unique_lock<std::mutex>& lock) {
    std::shared_ptr<Pending> head = queue_.front();
    if (head->next == head->tasks.size()) return false;
    const Task task = head->tasks[head->next++];
    // The job's start, stamped as its first task is taken (a lock-free CAS): tasks are taken in
    // order under the lock, so no other task's copy can begin before it.
    if (task.first == 0) head->job->state->markStarted();
    lock.unlock();
    if (head->holdReleases >= 0) waitHeld(head->holdReleases);  // test only: every task waits
    if (!head->fault) runTask(*head->pieces, task, head->stream, head->strips, head->bySrc);
    endStreaming(head->stream);
    lock.lock();
    if (--head->remaining == 0) {
      // Completed without the lock: completing may free a closed pool's memory (its last
      // reference), which must not stall every other submit, worker and drain. The job stays at
      // the head of the queue meanwhile, with no task left to take, so the next job does not
      // start and no inline job starts (busy_ counts it): a later transfer is never seen done
      // before this one.
      lock.unlock();
      completeJob(*head->job, head->fault);
      head->pieces = nullptr;
      head->job.reset();  // its plan storage
      lock.lock();
      queue_.pop_front();
      busy_.fetch_sub(kQueuedJob);
      work_.notify_all();
      if (queue_.empty()) idle_.notify_all();
      // Out of the queue, `head` is the last reference: its task list and cut copies (a copy of
      // a large plan, megabytes) are freed here without the lock, as the plan was above.
      lock.unlock();
      head.reset();
      lock.lock();
    }
    return true;
  }

  // Stops and joins the workers started (after drain(), or before any job was submitted).
  void stopWorkers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    work_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
  }

  const int32_t threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable work_;
  std::condition_variable idle_;
  std::deque<std::shared_ptr<Pending>> queue_;
  // kInlineRunning while a job runs inline on its submitting thread, plus kQueuedJob per job in
  // queue_ (changed with mutex_ held, as queue_). An inline job starts only from 0, without the
  // lock; a queued one does not run while the inline bit is set.
  static constexpr uint32_t kInlineRunning = 1;
  static constexpr uint32_t kQueuedJob = 2;
  std::atomic<uint32_t> busy_{0};
  std::atomic<int> drainers_{0};  // threads in drain() (mutex_ held to change it)
  bool stopping_ = false;
};

kvio_status cpuAvailable() {
  return KVIO_STATUS_OK;
}

kvio_status cpuCreate(int32_t threads, std::unique_ptr<Executor>* out) {
  KVIO_RETURN_IF_ERROR(checkThreadCount(threads));
  if (threads <= 0) {  // one per online core, as many as a caller may ask for at most
    threads = static_cast<int32_t>(
        std::min<unsigned>(kMostCpuThreads, std::max(1u, std::thread::hardware_concurrency())));
  }
  auto executor = std::make_unique<CpuExecutor>(threads);
  KVIO_RETURN_IF_ERROR(executor->startWorkers());
  *out = std::move(executor);
  return KVIO_STATUS_OK;
}

const BackendOps kCpuOps{KVIO_BACKEND_CPU, cpuAvailable, cpuCreate, nullptr, nullptr};

}  // namespace

const BackendOps& cpuBackendOps() {
  return kCpuOps;
}

}  // namespace kvio
