#include <kamp/model/training_state.hpp>
#include <kamp/numeric/convert.hpp>

#include "fields.hpp"

#include <cmath>
#include <cstring>
#include <iomanip>
#include <limits>
#include <sstream>

namespace kamp {

namespace {
template <class T>
std::string to_text(const T& v) {
  std::ostringstream text;
  text << std::setprecision(9) << v;
  return text.str();
}
}  // namespace

std::vector<std::string> option_differences(const train_options& saved, const train_options& now) {
  std::vector<std::pair<const char*, std::string>> before;
  detail::for_each_option(saved, [&](const char* name, const auto& v) { before.emplace_back(name, to_text(v)); });
  std::vector<std::string> out;
  std::size_t i = 0;
  detail::for_each_option(now, [&](const char*, const auto& v) {
    const std::string after = to_text(v);
    if (after != before[i].second) out.push_back(std::string(before[i].first) + " " + before[i].second + " -> " + after);
    ++i;
  });
  return out;
}

double element(const state_tensor& t, std::size_t i) {
  return visit_dtype<float>(t.type, [&](auto zero) {
    using T = decltype(zero);
    T x;
    std::memcpy(&x, t.bytes.data() + i * sizeof(T), sizeof(T));
    return double(load_float(&x));
  });
}

tensor_statistics statistics(const state_tensor& t, std::size_t offset, std::size_t count) {
  if (offset + count > t.size())
    throw std::out_of_range("kamp::statistics: elements [" + std::to_string(offset) + ", " +
                            std::to_string(offset + count) + ") lie outside the tensor's " + std::to_string(t.size()));
  tensor_statistics s;
  s.count = count;
  s.min = std::numeric_limits<double>::infinity();
  s.max = -s.min;
  double sum = 0;
  for (std::size_t i = offset; i < offset + count; ++i) {
    const double v = element(t, i);
    if (!std::isfinite(v)) {
      ++s.non_finite;
      continue;
    }
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    sum += v;
  }
  const std::size_t finite = count - s.non_finite;
  if (finite == 0) s.min = s.max = std::numeric_limits<double>::quiet_NaN();
  s.mean = finite > 0 ? sum / double(finite) : std::numeric_limits<double>::quiet_NaN();
  return s;
}

}  // namespace kamp
