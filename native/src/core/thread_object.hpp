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
// An object made after the C library ran the thread's thread_local destructors (a thread whose
// first kvio call is made from a pthread-key destructor) would never see its guard run: each
// object is also the value of a pthread key of its own, which the guard clears, so the key's
// destructor frees only such a late object (the C library runs key destructors again for values
// set while they run). Objects made on the main thread after exit() began are not freed (the
// process is ending).
#ifndef KVIO_CORE_THREAD_OBJECT_HPP_
#define KVIO_CORE_THREAD_OBJECT_HPP_

#include <pthread.h>

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
      // Freed by the key's destructor if the guard never runs (a late object, above).
      const Key& k = key();
      if (k.made) (void)pthread_setspecific(k.key, object);
    }
    return object;
  }
  /// This thread's object if it has one, without making it.
  static T* existing() noexcept { return pointer(); }

 private:
  struct Guard {
    ~Guard() {
      const Key& k = key();
      if (k.made) (void)pthread_setspecific(k.key, nullptr);  // freed here, not by the key
      release();
    }
  };
  struct Key {
    pthread_key_t key{};
    bool made = false;  // without a key (none left), a late object is not freed
  };
  static const Key& key() {
    static const Key k = [] {
      Key made;
      made.made = pthread_key_create(&made.key, [](void*) { release(); }) == 0;
      return made;
    }();
    return k;
  }
  static void release() noexcept {
    gone() = true;
    delete pointer();
    pointer() = nullptr;
  }
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
