#include <kamp/model/state/training_state.hpp>
#include <kamp/numeric/convert.hpp>

#include "state/fields.hpp"

#include <algorithm>
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

std::vector<std::pair<std::string, dtype>> state_layout(const precision_policy& policy) {
  const dtype moments = policy.mode == precision_mode::pure_bf16 ? dtype::bf16 : dtype::fp32;
  std::vector<std::pair<std::string, dtype>> out{{"model", policy.low()}};
  if (policy.has_master()) out.emplace_back("master", dtype::fp32);
  out.emplace_back("moment1", moments);
  out.emplace_back("moment2", moments);
  if (policy.mode == precision_mode::pure_bf16 && policy.update == pure_bf16_update::kahan)
    out.emplace_back("compensation", dtype::bf16);
  return out;
}

std::vector<std::string> option_differences(const train_options& saved, const train_options& now) {
  std::vector<std::pair<const char*, std::string>> before;
  detail::for_each_option(saved, [&](const char* name, const auto& v) { before.emplace_back(name, to_text(v)); });
  std::vector<std::string> out;
  std::size_t i = 0;
  detail::for_each_option(now, [&](const char*, const auto& v) {
    const std::string after = to_text(v);
    if (after != before[i].second)
      out.push_back(std::string(before[i].first) + " " + before[i].second + " -> " + after);
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

training_state slice_of(const training_state& whole, element_range range) {
  if (!whole.slice.whole() || range.whole() || range.first > range.last)
    throw std::invalid_argument("kamp::slice_of: a slice is cut from a whole state, by a range first < last");
  // Member by member: copying `whole` first would hold the whole state twice.
  training_state s;
  detail::for_each_run_field(s, whole, [](auto& to, const auto& from) { to = from; });
  s.slice = range;
  for (const auto& t : whole.tensors) {
    const std::size_t width = size_of(t.type);
    if (range.last * width > t.bytes.size())
      throw std::invalid_argument("kamp::slice_of: the range is past the end of tensor " + t.role);
    s.tensors.push_back(
        {t.role, t.type,
         std::vector<unsigned char>(t.bytes.begin() + range.first * width, t.bytes.begin() + range.last * width)});
  }
  return s;
}

void check_state(const training_state& s, const tensor_table& table) {
  const auto fail = [](const std::string& what) { throw std::invalid_argument(what); };
  const state_tensor* model = nullptr;
  const state_tensor* master = nullptr;
  const element_range slice = s.slice.within(table.flat_size());
  // The elements of a tensor the state holds.
  const auto held = [&](const tensor_table::entry& e) { return overlap(e.range(), slice); };
  for (const state_tensor& x : s.tensors) {
    if (x.role == "model") model = &x;
    if (x.role == "master") master = &x;
    for (const auto& e : table.entries()) {
      const element_range part = held(e);
      if (part.empty()) continue;
      const tensor_statistics st = statistics(x, part.first - slice.first, part.size());
      if (st.non_finite > 0)
        fail(x.role + "/" + e.name + " has " + std::to_string(st.non_finite) +
             " non-finite values: this state diverged before it was saved; resume from an earlier checkpoint");
      if (x.role == "moment2" && st.count > 0 && st.min < 0)
        fail("moment2/" + e.name + " holds a negative second moment (" + to_text(st.min) +
             "): AdamW's squared-gradient averages are never negative; the file was damaged or edited");
    }
  }
  // AMP: the optimizer writes the model copy as its master rounded to nearest, every step.
  if (model != nullptr && master != nullptr && model->type != dtype::fp32)
    visit_dtype<float>(model->type, [&](auto zero) {
      using T = decltype(zero);
      for (const auto& e : table.entries())
        for (std::size_t i = held(e).first; i < held(e).last; ++i) {
          float m;
          T copy;
          std::memcpy(&m, master->bytes.data() + (i - slice.first) * sizeof(float), sizeof(float));
          std::memcpy(&copy, model->bytes.data() + (i - slice.first) * sizeof(T), sizeof(T));
          const T rounded = from_float<T>(m);
          if (std::memcmp(&rounded, &copy, sizeof(T)) != 0)
            fail("model/" + e.name + " element " + std::to_string(i - e.offset) + " is " + to_text(load_float(&copy)) +
                 " but its fp32 master " + to_text(m) + " rounds to " + to_text(load_float(&rounded)) +
                 ": the model copy and the master weights disagree; the file was damaged or edited");
        }
    });
  if (s.policy.fp8()) check_fp8_values(s.fp8);
  constexpr std::int64_t most = std::int64_t(1) << 40;
  if (s.steps_taken < 0 || s.attempts < s.steps_taken || s.attempts >= most || s.scaler.steps != s.attempts ||
      s.scaler.skipped_steps != s.attempts - s.steps_taken)
    fail("inconsistent counters: " + std::to_string(s.steps_taken) + " steps taken of " + std::to_string(s.attempts) +
         " attempts (at most 2^40), but the loss scaler saw " + std::to_string(s.scaler.steps) + " updates with " +
         std::to_string(s.scaler.skipped_steps) + " skipped");
  if (!(s.scaler.scale > 0.0f) || !std::isfinite(s.scaler.scale) || s.scaler.growth_tracker < 0 ||
      s.scaler.hysteresis_left < 1)
    fail("impossible loss scaler state: scale " + to_text(s.scaler.scale) + ", growth tracker " +
         std::to_string(s.scaler.growth_tracker) + ", hysteresis left " + std::to_string(s.scaler.hysteresis_left) +
         " (the scale must be finite and positive, the tracker >= 0, hysteresis >= 1)");
}

}  // namespace kamp
