#ifndef KAMP_MODEL_DIST_AGREE_HPP
#define KAMP_MODEL_DIST_AGREE_HPP

#include <kamp/model/dist/communicator.hpp>

#include <string>

namespace kamp::dist {

/// \brief Runs `work` on this rank, then agrees with the other ranks whether it succeeded on
/// all of them (one collective, so every rank of `ranks` must call it). Returns "" when it
/// did; otherwise the message of the `Caught` exception `work` threw here, or `elsewhere` on a
/// rank where it succeeded while another failed. So every rank takes the same branch next:
/// on to a collective, or out with an error, and none waits for a rank that left.
template <class Caught, class Work>
std::string agree(const communicator& ranks, const std::string& elsewhere, Work&& work) {
  std::string problem;
  try {
    work();
  } catch (const Caught& e) {
    problem = e.what();
    if (problem.empty()) problem = "an error without a message";
  }
  if (ranks.all(problem.empty())) return "";
  return problem.empty() ? elsewhere : problem;
}

}  // namespace kamp::dist

#endif
