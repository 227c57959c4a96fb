#ifndef KAMP_MODEL_SRC_CONFIG_SPELLINGS_HPP
#define KAMP_MODEL_SRC_CONFIG_SPELLINGS_HPP

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace kamp::detail {

/// "a, b or c": the spellings (each value's name()) that a message about an unknown one offers,
/// each followed by " (label)" where `label` gives one.
template <class Enum>
std::string spelled_alternatives(const std::vector<Enum>& values, const char* (*label)(Enum) = nullptr) {
  std::string text;
  for (std::size_t i = 0; i < values.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == values.size() ? " or " : ", ") + std::string(name(values[i]));
    const char* l = label != nullptr ? label(values[i]) : "";
    if (*l != '\0') text += " (" + std::string(l) + ")";
  }
  return text;
}

/// The value of `values` whose name() is `s`; std::invalid_argument naming `what` and the
/// spellings otherwise.
template <class Enum>
Enum parse_spelling(const std::string& s, const std::vector<Enum>& values, const char* what) {
  for (const Enum v : values)
    if (s == name(v)) return v;
  throw std::invalid_argument("unknown " + std::string(what) + " '" + s + "': expected " +
                              spelled_alternatives(values));
}

}  // namespace kamp::detail

#endif
