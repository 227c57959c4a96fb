#include <kamp/model/config/activation_recompute.hpp>

#include "config/spellings.hpp"

namespace kamp {

const char* name(activation_recompute r) { return r == activation_recompute::blocks ? "blocks" : "none"; }

std::vector<activation_recompute> activation_recomputes() {
  return {activation_recompute::none, activation_recompute::blocks};
}

activation_recompute parse_activation_recompute(const std::string& s) {
  return detail::parse_spelling(s, activation_recomputes(), "activation recomputation");
}

}  // namespace kamp
