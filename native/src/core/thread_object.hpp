// Per-thread objects that stay safe to use while their thread exits.
//
// A `thread_local` with a destructor is destroyed when its thread exits, before the thread's
// pthread-key destructors run (and, on the main thread, at exit() before the static destructors
// and atexit handlers), and before every thread_local object constructed earlier on that thread.
// A call into kvio from any of those (kvio.h forbids none) would use kvio's per-thread scratch
// after its destruction: a destroyed vector keeps its pointer, so the call would write into
// freed memory. kvio's per-thread state is therefore reached through ThreadObject: a trivially
// destructible pointer and flag, which stay valid until the thread's storage itself is gone, and
// a guard whose destructor frees the object and marks it gone. From then on the thread has no
// object (get() answers nullptr) and the caller uses memory of its own for that call
// (ThreadScratch does so).
//
// One case leaks: a thread whose first kvio call is made from a pthread-key destructor makes its
// objects after the C library ran the thread's thread_local destructors, and a destructor
// registered then is never run (a few hundred bytes per such thread).
#ifndef KVIO_CORE_THREAD_OBJECT_HPP_
#define KVIO_CORE_THREAD_OBJECT_HPP_

#include <memory>

namespace kvio {

/// The calling thread's object of type T, one per `Tag`, made on first use.
template <class T, class Tag>
class ThreadObject {
 public:
  /// This thread's object, made on first use (std::bad_alloc when it cannot be); nullptr once
  /// the thread's exit has destroyed it.
  static T* get() {
    T*& object = pointer();
    if (object == nullptr && !gone()) {
      object = new T();
      // Made now, so destroyed in the reverse order of construction with the thread's other
      // thread_local objects: after those made later, which may still call kvio.
      static thread_local Guard guard;
      (void)guard;
    }
    return object;
  }
  /// This thread's object if it has one, without making it.
  static T* existing() noexcept { return pointer(); }

 private:
  struct Guard {
    ~Guard() {
      gone() = true;
      delete pointer();
      pointer() = nullptr;
    }
  };
  // Constant-initialised and trivially destructible: usable until the thread's storage goes.
  static T*& pointer() noexcept {
    static thread_local T* object = nullptr;
    return object;
  }
  static bool& gone() noexcept {
    static thread_local bool flag = false;
    return flag;
  }
};

/// This thread's object of type T (ThreadObject), or one of the caller's own for this scope when
/// the thread's has gone: reusable scratch for a call that also runs while its thread exits.
template <class T, class Tag>
class ThreadScratch {
 public:
  ThreadScratch() : object_(ThreadObject<T, Tag>::get()) {
    if (object_ == nullptr) {
      own_.reset(new T());
      object_ = own_.get();
    }
  }
  ThreadScratch(const ThreadScratch&) = delete;
  ThreadScratch& operator=(const ThreadScratch&) = delete;
  T& operator*() const { return *object_; }
  T* operator->() const { return object_; }

 private:
  T* object_;
  std::unique_ptr<T> own_;  // only while the thread exits
};

}  // namespace kvio

#endif  // KVIO_CORE_THREAD_OBJECT_HPP_
