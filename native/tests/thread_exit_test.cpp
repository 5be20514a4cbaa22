// Calls into kvio while the calling thread exits: from a pthread-key destructor, from the
// destructor of a thread_local object made before the thread's first kvio call, and (main thread)
// from an atexit handler. kvio.h forbids none of these. The thread called kvio before, so kvio's
// per-thread scratch (index runs, validation and plan scratch, plan storage, the last error) had
// been made, and C++ destroys thread_local objects before all three: each call must work and
// use no destroyed scratch (before the fix, the key destructor's submit corrupted the heap;
// AddressSanitizer reports any such use in CI's sanitizer run).
//
// The oracle is the layer_first row formula written out here: component c, layer l, token t
// at ((c * layers + l) * tokens + t) * row bytes; a whole-pool comparison, destination canary.
#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kvio/kvio.h"

namespace {

constexpr int64_t kLayers = 2;
constexpr int64_t kTokens = 64;
constexpr int64_t kHeads = 4;
constexpr int64_t kHeadBytes = 32;
constexpr int64_t kRow = kHeads * kHeadBytes;
constexpr uint8_t kCanary = 0xA5;

struct Outcome {
  bool ran = false;
  kvio_status transfer = KVIO_STATUS_INTERNAL;
  bool bytesRight = false;
  kvio_status rejected = KVIO_STATUS_OK;
  std::string rejectedMessage;
};

// One executor and two pools, made on the test's thread.
struct Setup {
  uint64_t executor = 0;
  uint64_t src = 0;
  uint64_t dst = 0;
};
Setup setup;

uint8_t* regionOf(uint64_t pool) {
  uint64_t address = 0;
  if (kvio_pool_region(pool, 0, &address, nullptr, nullptr) != KVIO_STATUS_OK) return nullptr;
  return reinterpret_cast<uint8_t*>(address);
}

uint64_t poolBytes() {
  return static_cast<uint64_t>(2 * kLayers * kTokens * kRow);
}

uint8_t sourceByte(uint64_t offset) {
  return static_cast<uint8_t>((offset * 131 + 7) >> 3);
}

bool makeSetup(int32_t threads) {
  const kvio_pool_spec spec{KVIO_KIND_MHA, KVIO_LAYOUT_LAYER_FIRST, kLayers, kTokens, 1, kHeads,
                            kHeadBytes};
  if (kvio_pool_allocate(&spec, &setup.src) != KVIO_STATUS_OK ||
      kvio_pool_allocate(&spec, &setup.dst) != KVIO_STATUS_OK ||
      kvio_executor_create(KVIO_BACKEND_CPU, threads, &setup.executor) != KVIO_STATUS_OK) {
    return false;
  }
  uint8_t* src = regionOf(setup.src);
  uint8_t* dst = regionOf(setup.dst);
  if (src == nullptr || dst == nullptr) return false;
  for (uint64_t i = 0; i < poolBytes(); ++i) src[i] = sourceByte(i);
  std::memset(dst, kCanary, poolBytes());
  return true;
}

void closeSetup() {
  kvio_executor_close(setup.executor);
  kvio_pool_close(setup.src);
  kvio_pool_close(setup.dst);
  setup = Setup{};
}

// Moves source token t to destination token kTokens-1-t for the even t (all layers), then
// compares the whole destination: moved rows, canary everywhere else.
void transferAndCheck(Outcome* out) {
  out->ran = true;
  std::vector<int64_t> srcIdx, dstIdx;
  for (int64_t t = 0; t < kTokens; t += 2) {
    srcIdx.push_back(t);
    dstIdx.push_back(kTokens - 1 - t);
  }
  const kvio_transfer_desc desc{
      setup.src, setup.dst, srcIdx.data(), dstIdx.data(), static_cast<int64_t>(srcIdx.size()),
      0,         0,         kLayers};
  uint64_t transfer = 0;
  out->transfer = kvio_submit(setup.executor, &desc, &transfer);
  if (out->transfer == KVIO_STATUS_OK) {
    out->transfer = kvio_transfer_wait(transfer, -1);
    kvio_transfer_close(transfer);
  }
  const uint8_t* dst = regionOf(setup.dst);
  bool right = dst != nullptr;
  for (int64_t c = 0; right && c < 2; ++c) {
    for (int64_t l = 0; right && l < kLayers; ++l) {
      for (int64_t t = 0; right && t < kTokens; ++t) {
        const uint64_t rowStart = static_cast<uint64_t>(((c * kLayers + l) * kTokens + t) * kRow);
        const int64_t from = kTokens - 1 - t;  // the source token that lands here, if moved
        const bool moved = from % 2 == 0;
        const uint64_t fromStart =
            static_cast<uint64_t>(((c * kLayers + l) * kTokens + from) * kRow);
        for (int64_t b = 0; b < kRow; ++b) {
          const uint8_t want = moved ? sourceByte(fromStart + b) : kCanary;
          if (dst[rowStart + b] != want) right = false;
        }
      }
    }
  }
  out->bytesRight = right;
  // A call that fails writes the thread's last error.
  const int64_t bad = kTokens;  // one past the end
  const kvio_transfer_desc badDesc{setup.src, setup.dst, &bad, &bad, 1, 0, 0, 1};
  uint64_t unused = 0;
  out->rejected = kvio_submit(setup.executor, &badDesc, &unused);
  out->rejectedMessage = kvio_last_error();
}

// Makes kvio's per-thread scratch on this thread: a transfer and a failing call.
void useKvioOnce() {
  Outcome warmUp;
  transferAndCheck(&warmUp);
  std::memset(regionOf(setup.dst), kCanary, poolBytes());
}

void expectWorked(const Outcome& o) {
  ASSERT_TRUE(o.ran);
  EXPECT_EQ(o.transfer, KVIO_STATUS_OK);
  EXPECT_TRUE(o.bytesRight);
  EXPECT_EQ(o.rejected, KVIO_STATUS_OUT_OF_RANGE);
  EXPECT_NE(o.rejectedMessage.find("out of range"), std::string::npos) << o.rejectedMessage;
}

Outcome keyOutcome;
void keyDestructor(void*) {
  transferAndCheck(&keyOutcome);
}

TEST(ThreadExit, APthreadKeyDestructorCanSubmitAfterTheThreadDid) {
  ASSERT_TRUE(makeSetup(2)) << kvio_last_error();
  pthread_key_t key;
  ASSERT_EQ(pthread_key_create(&key, keyDestructor), 0);
  std::thread([&] {
    pthread_setspecific(key, &key);  // non-null: the destructor runs at the thread's exit
    useKvioOnce();
  }).join();
  pthread_key_delete(key);
  expectWorked(keyOutcome);
  closeSetup();
}

Outcome threadLocalOutcome;
struct SubmitsWhenDestroyed {
  bool armed = false;
  ~SubmitsWhenDestroyed() {
    if (armed) transferAndCheck(&threadLocalOutcome);
  }
};
thread_local SubmitsWhenDestroyed submitsWhenDestroyed;

TEST(ThreadExit, AThreadLocalMadeBeforeKviosScratchCanSubmitFromItsDestructor) {
  ASSERT_TRUE(makeSetup(2)) << kvio_last_error();
  std::thread([] {
    submitsWhenDestroyed.armed = true;  // made first: destroyed after kvio's scratch
    useKvioOnce();
  }).join();
  expectWorked(threadLocalOutcome);
  closeSetup();
}

TEST(ThreadExit, ANewThreadCanSubmitFromItsKeyDestructorOnly) {
  // No kvio call before the destructor's: kvio makes its scratch while the thread exits (freed
  // by its own keys then: thread_object_test; LeakSanitizer in CI's sanitizer run).
  ASSERT_TRUE(makeSetup(2)) << kvio_last_error();
  keyOutcome = Outcome{};
  pthread_key_t key;
  ASSERT_EQ(pthread_key_create(&key, keyDestructor), 0);
  std::thread([&] { pthread_setspecific(key, &key); }).join();
  pthread_key_delete(key);
  expectWorked(keyOutcome);
  closeSetup();
}

// The main thread at exit(): its thread_local objects go first, then the atexit handlers.
void atExitHandler() {
  Outcome o;
  transferAndCheck(&o);
  const bool ok = o.transfer == KVIO_STATUS_OK && o.bytesRight &&
                  o.rejected == KVIO_STATUS_OUT_OF_RANGE &&
                  o.rejectedMessage.find("out of range") != std::string::npos;
  _exit(ok ? 0 : 3);
}

TEST(ThreadExitDeathTest, AnAtexitHandlerCanSubmitAfterTheMainThreadDid) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (!makeSetup(1)) _exit(4);
        useKvioOnce();
        std::atexit(atExitHandler);
        std::exit(5);  // the handler exits 0 when every check held
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
