#ifndef KAMP_TESTS_SUPPORT_TRAINING_STATES_HPP
#define KAMP_TESTS_SUPPORT_TRAINING_STATES_HPP

#include <kamp/model/training_state.hpp>

#include "catch.hpp"

#include <cstring>

namespace kamp::test {

/// Two training states are bitwise equal: counters, scaler, every tensor's bytes.
inline void require_same_state(const training_state& a, const training_state& b) {
  REQUIRE(a.steps_taken == b.steps_taken);
  REQUIRE(a.attempts == b.attempts);
  REQUIRE(std::memcmp(&a.scaler, &b.scaler, sizeof a.scaler) == 0);
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    INFO("tensor " << a.tensors[i].role);
    REQUIRE(a.tensors[i].role == b.tensors[i].role);
    REQUIRE(a.tensors[i].type == b.tensors[i].type);
    REQUIRE(a.tensors[i].bytes == b.tensors[i].bytes);
  }
}

}  // namespace kamp::test

#endif
