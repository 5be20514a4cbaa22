// ThreadObject (core/thread_object.hpp): a thread's object is freed when the thread exits,
// whether it was made in the thread's body or only in a pthread-key destructor (after the C
// library ran the thread's thread_local destructors), and it lives through the thread's
// thread_local destructors (LeakSanitizer checks the frees in CI's sanitizer run).
#include "core/thread_object.hpp"

#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <thread>

namespace {

std::atomic<int> live{0};
struct Counted {
  Counted() { live.fetch_add(1); }
  ~Counted() { live.fetch_sub(1); }
  int value = 0;
};
struct TagA;
struct TagB;
struct TagC;

// Runs `body` on a new thread with a pthread key set, whose destructor runs `atKeyDestructor`.
template <class Body, class AtExit>
void onThreadWithKey(Body body, AtExit atKeyDestructor) {
  static AtExit* action = nullptr;
  action = &atKeyDestructor;
  pthread_key_t key;
  ASSERT_EQ(pthread_key_create(&key, [](void*) { (*action)(); }), 0);
  std::thread([&] {
    pthread_setspecific(key, &key);
    body();
  }).join();
  pthread_key_delete(key);
}

// Each test compares `live` with what it was when the test began: a leak in one test is that
// test's failure only.
TEST(ThreadObject, IsFreedWhenItsThreadExits) {
  const int before = live.load();
  std::thread([before] {
    Counted* c = kvio::ThreadObject<Counted, TagA>::get();
    ASSERT_NE(c, nullptr);
    Counted* again = kvio::ThreadObject<Counted, TagA>::get();
    EXPECT_EQ(again, c);  // one per thread
    EXPECT_EQ(live.load(), before + 1);
  }).join();
  EXPECT_EQ(live.load(), before);
}

TEST(ThreadObject, MadeFirstInAKeyDestructorIsFreedToo) {
  const int before = live.load();
  bool made = false;
  onThreadWithKey([] {}, [&] { made = kvio::ThreadObject<Counted, TagB>::get() != nullptr; });
  EXPECT_TRUE(made);
  EXPECT_EQ(live.load(), before);  // without the key of its own, the late object leaked
}

int valueSeenAtExit = 0;
struct ReadsAtExit {
  bool armed = false;
  ~ReadsAtExit() {
    if (armed) valueSeenAtExit = kvio::ThreadObject<Counted, TagC>::get()->value;
  }
};
thread_local ReadsAtExit readsAtExit;

TEST(ThreadObject, LivesThroughTheThreadsThreadLocalDestructors) {
  // A thread_local made before the object is destroyed after any thread_local made later; the
  // object (a key's value) is still the thread's then, not destroyed nor made again.
  const int before = live.load();
  std::thread([] {
    readsAtExit.armed = true;
    kvio::ThreadObject<Counted, TagC>::get()->value = 7;
  }).join();
  EXPECT_EQ(valueSeenAtExit, 7);
  EXPECT_EQ(live.load(), before);
}

}  // namespace
