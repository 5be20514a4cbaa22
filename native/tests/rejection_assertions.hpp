// EXPECT_REJECTED(call, status, "substring", ...): the call returned `status` and
// kvio_last_error() contains every substring (what is wrong and what is valid). expectError():
// the same for the C++ layer, where a refusal is a thrown kvio::Error; it is there where
// kvio/kvio.hpp was included first (white-box tests of the core, whose own kvio::Transfer and
// kvio::Executor clash with kvio.hpp's, include this header without it). Shared by the tests
// that check refusals.
#ifndef KVIO_TESTS_REJECTION_ASSERTIONS_HPP_
#define KVIO_TESTS_REJECTION_ASSERTIONS_HPP_

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

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

#ifdef KVIO_KVIO_HPP_
/// Runs `call`, which must throw kvio::Error with `status` and a message holding every one of
/// `parts`; says what happened otherwise (`accepted` names the call when it did not throw).
template <class Call>
void expectError(Call&& call, kvio_status status, const std::vector<std::string>& parts,
                 const std::string& accepted = "the call") {
  try {
    call();
    ADD_FAILURE() << accepted << " was accepted; expected " << kvio_status_name(status);
  } catch (const kvio::Error& e) {
    EXPECT_EQ(e.status(), status) << e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "'" << part << "' not in: " << e.what();
    }
  }
}
#endif  // KVIO_KVIO_HPP_

}  // namespace kvio_test

#define EXPECT_REJECTED(call, status, ...) \
  EXPECT_TRUE(::kvio_test::rejected((call), (status), {__VA_ARGS__}))

#endif  // KVIO_TESTS_REJECTION_ASSERTIONS_HPP_
