// EXPECT_REJECTED(call, status, "substring", ...): the call returned `status` and
// kvio_last_error() contains every substring (what is wrong and what is valid). Shared by the
// rejection and reliability tests.
#ifndef KVIO_TESTS_REJECTION_ASSERTIONS_HPP_
#define KVIO_TESTS_REJECTION_ASSERTIONS_HPP_

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "kvio/kvio.h"

namespace kvio_test {

inline ::testing::AssertionResult rejected(kvio_status actual, kvio_status expected,
                                           std::initializer_list<std::string> substrings) {
  const std::string message = kvio_last_error();
  if (actual != expected) {
    return ::testing::AssertionFailure() << "status " << kvio_status_name(actual) << ", expected "
                                         << kvio_status_name(expected) << "; message: " << message;
  }
  for (const std::string& s : substrings) {
    if (message.find(s) == std::string::npos) {
      return ::testing::AssertionFailure() << "message \"" << message << "\" lacks \"" << s << "\"";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace kvio_test

#define EXPECT_REJECTED(call, status, ...) \
  EXPECT_TRUE(::kvio_test::rejected((call), (status), {__VA_ARGS__}))

#endif  // KVIO_TESTS_REJECTION_ASSERTIONS_HPP_
