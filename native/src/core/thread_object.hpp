// Per-thread objects that stay safe to use while their thread exits.
//
// A `thread_local` with a destructor is destroyed when its thread exits, before the thread's
// pthread-key destructors run (and, on the main thread, at exit() before the static destructors
// and atexit handlers), and before every thread_local object constructed earlier on that thread.
// A call into kvio from any of those (kvio.h forbids none) would use kvio's per-thread scratch
// after its destruction: a destroyed vector keeps its pointer, so the call would write into
// freed memory. kvio's per-thread objects are therefore the values of pthread keys, reached
// through a trivially destructible pointer and flag (usable until the thread's storage itself
// goes):
//  - they live through the thread's thread_local destructors, which may call kvio;
//  - the key's destructor frees the object and marks it gone; a key destructor that runs after
//    it (the C library runs key destructors in an order of its own) finds none (get() answers
//    nullptr) and the caller uses memory of its own for that call (ThreadScratch does so);
//  - an object made while key destructors run (a thread whose first kvio call is made from one)
//    is freed in the C library's next round of key destructors;
//  - on the main thread no key destructor runs at exit(): the objects stay, usable by atexit
//    handlers and static destructors, until the process ends.
// libkvio is linked with -z nodelete (CMakeLists.txt), so the destructors' code is never
// unloaded while a thread still holds a value. Without a key (none left in the process), get()
// answers nullptr and each call uses its own memory.
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
  /// the thread's exit has destroyed it, or when there is no key for it.
  static T* get() {
    T*& object = pointer();
    if (object == nullptr && !gone()) {
      const Key& k = key();
      if (!k.made) return nullptr;
      object = new T();
      if (pthread_setspecific(k.key, object) != 0) {  // no memory for the thread's key table
        delete object;
        object = nullptr;
      }
    }
    return object;
  }
  /// This thread's object if it has one, without making it.
  static T* existing() noexcept { return pointer(); }

 private:
  struct Key {
    pthread_key_t key{};
    bool made = false;
  };
  static const Key& key() {
    static const Key k = [] {
      Key made;
      made.made = pthread_key_create(&made.key, [](void* object) {
                    gone() = true;
                    pointer() = nullptr;
                    delete static_cast<T*>(object);
                  }) == 0;
      return made;
    }();
    return k;
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
