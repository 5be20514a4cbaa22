// Tests of the bounded free list the CUDA executors reuse their transfers' events from
// (native/src/cuda/recycling_pool.hpp), with integers standing for events: handles given back
// are taken again (most recent first) instead of created; at most `capacity` wait, the rest
// are destroyed at once; what still waits is destroyed with the pool; nothing is destroyed
// twice or lost, also with threads giving and taking at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

#include "cuda/recycling_pool.hpp"

namespace kvio_test {
namespace {

using Pool = kvio::cuda::RecyclingPool<int>;

TEST(CudaRecyclingPool, ReusesGivenHandlesUpToItsCapacity) {
  std::vector<int> destroyed;
  {
    Pool pool(2, [&](int h) { destroyed.push_back(h); });
    int h = 0;
    EXPECT_FALSE(pool.take(&h));  // empty: the caller creates one
    pool.give(1);
    pool.give(2);
    pool.give(3);  // full: destroyed now
    EXPECT_EQ(destroyed, std::vector<int>({3}));
    EXPECT_EQ(pool.waiting(), 2u);
    ASSERT_TRUE(pool.take(&h));
    EXPECT_EQ(h, 2);
    ASSERT_TRUE(pool.take(&h));
    EXPECT_EQ(h, 1);
    EXPECT_FALSE(pool.take(&h));
    pool.give(4);
  }
  EXPECT_EQ(destroyed, std::vector<int>({3, 4}));  // what waited goes with the pool
}

TEST(CudaRecyclingPool, ConcurrentGiveAndTakeLoseNothing) {
  std::vector<int> destroyed;
  std::mutex destroyedMutex;
  std::vector<int> kept;
  {
    Pool pool(8, [&](int h) {
      std::lock_guard<std::mutex> lock(destroyedMutex);
      destroyed.push_back(h);
    });
    std::vector<std::thread> threads;
    std::vector<std::vector<int>> taken(4);
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&pool, &taken, t] {
        for (int i = 0; i < 1000; ++i) {
          pool.give(t * 1000 + i);
          int h = 0;
          if (i % 3 == 0 && pool.take(&h)) taken[static_cast<size_t>(t)].push_back(h);
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (const auto& list : taken) kept.insert(kept.end(), list.begin(), list.end());
  }
  std::vector<int> all = destroyed;
  all.insert(all.end(), kept.begin(), kept.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), 4000u);  // each handle either taken back or destroyed, exactly once
  for (int i = 0; i < 4000; ++i) ASSERT_EQ(all[static_cast<size_t>(i)], i);
}

}  // namespace
}  // namespace kvio_test
