#ifndef KAMP_TESTS_SUPPORT_TRAINING_STATES_HPP
#define KAMP_TESTS_SUPPORT_TRAINING_STATES_HPP

#include <kamp/model/state/training_state.hpp>

#include "catch.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>

namespace kamp::test {

/// Where two training states first differ, in words; empty when they are bitwise equal:
/// counters, scaler, and every tensor's role, type and bytes.
inline std::string state_difference(const training_state& a, const training_state& b) {
  if (a.steps_taken != b.steps_taken)
    return "steps_taken " + std::to_string(a.steps_taken) + " vs " + std::to_string(b.steps_taken);
  if (a.attempts != b.attempts) return "attempts " + std::to_string(a.attempts) + " vs " + std::to_string(b.attempts);
  if (std::memcmp(&a.scaler, &b.scaler, sizeof a.scaler) != 0) return "the loss scaler's state";
  if (a.tensors.size() != b.tensors.size())
    return std::to_string(a.tensors.size()) + " vs " + std::to_string(b.tensors.size()) + " tensors";
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    const state_tensor &x = a.tensors[i], &y = b.tensors[i];
    const std::string which = "tensor " + std::to_string(i) + " (" + x.role + ")";
    if (x.role != y.role) return which + ": role " + x.role + " vs " + y.role;
    if (x.type != y.type) return which + ": type " + name(x.type) + " vs " + name(y.type);
    if (x.bytes.size() != y.bytes.size())
      return which + ": " + std::to_string(x.bytes.size()) + " vs " + std::to_string(y.bytes.size()) + " bytes";
    const auto at = std::mismatch(x.bytes.begin(), x.bytes.end(), y.bytes.begin()).first;
    if (at != x.bytes.end()) return which + ": byte " + std::to_string(at - x.bytes.begin()) + " differs";
  }
  return "";
}

/// Two training states are bitwise equal (the message says where they are not).
inline void require_same_state(const training_state& a, const training_state& b) {
  REQUIRE(state_difference(a, b) == "");
}

/// The same comparison as a verdict, for tests under mpirun, which share it between the ranks
/// before asserting (a REQUIRE failing on one rank alone would leave the others waiting).
inline bool same_state(const training_state& a, const training_state& b) { return state_difference(a, b).empty(); }

}  // namespace kamp::test

#endif
