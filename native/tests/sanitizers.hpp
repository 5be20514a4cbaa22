// Which sanitizer this test binary was built with, for the few tests whose subject a sanitizer
// cannot run: a caller's deliberate data race (ThreadSanitizer reports it, rightly), threads
// started in a forked child (ThreadSanitizer kills the child). Such a test skips, saying why.
#ifndef KVIO_TESTS_SANITIZERS_HPP_
#define KVIO_TESTS_SANITIZERS_HPP_

namespace kvio_test {

#if defined(__SANITIZE_THREAD__)  // gcc
constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)  // clang
#if __has_feature(thread_sanitizer)
constexpr bool kThreadSanitizer = true;
#else
constexpr bool kThreadSanitizer = false;
#endif
#else
constexpr bool kThreadSanitizer = false;
#endif

}  // namespace kvio_test

#endif  // KVIO_TESTS_SANITIZERS_HPP_
