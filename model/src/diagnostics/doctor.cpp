#include <kamp/model/diagnostics/doctor.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace kamp {

namespace {

constexpr double fp16_max = 65504.0;
constexpr double underflow_threshold = 0.01, swallowed_threshold = 0.10;
// FP8: saturation clamps outliers (delayed scaling clamps a few while the weights grow, as in
// Transformer Engine; 0.1-0.2% of a tensor in the first steps of the doctor tests); underflow
// to zero means the scale no longer fits the data.
constexpr double fp8_saturation_threshold = 0.01, fp8_underflow_threshold = 0.01;

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100.0 * fraction);
  return text;
}

std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", x);
  return text;
}

// Half a bf16 ulp of w: bf16 keeps 8 significant bits; below its normal range the ulp is 2^-133.
double half_bf16_ulp(double w) {
  int e = 0;
  std::frexp(w, &e);
  return 0.5 * std::max(std::ldexp(1.0, e - 8), std::ldexp(1.0, -133));
}

const state_tensor* find(const training_state& s, const std::string& role) {
  for (const auto& t : s.tensors)
    if (t.role == role) return &t;
  return nullptr;
}

// The exact weight of element i: the fp32 master, or the model copy plus its Kahan compensation.
double exact_weight(const training_state& s, std::size_t i) {
  if (const auto* master = find(s, "master")) return element(*master, i);
  const auto* compensation = find(s, "compensation");
  return element(*find(s, "model"), i) + (compensation ? element(*compensation, i) : 0.0);
}

void measure_gradients(trainer& t, diagnosis& d) {
  const auto grads = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), t.model().grads());
  // Zeros count as underflow: in amp_fp16 they are what an underflowing backward pass leaves.
  std::size_t finite = 0, flushed = 0, subnormal = 0;
  for (const auto& e : t.model().table().entries())
    for (std::size_t i = e.offset; i < e.offset + e.size; ++i) {
      const double g = std::fabs(double(grads(i)));
      if (!std::isfinite(g)) continue;
      ++finite;
      flushed += g < std::ldexp(1.0, -24);
      subnormal += g < std::ldexp(1.0, -14);
    }
  if (finite > 0) {
    d.gradient_underflow_fp16 = double(flushed) / double(finite);
    d.gradient_subnormal_fp16 = double(subnormal) / double(finite);
  }
}

void measure_updates(const tensor_table& table, const training_state& before, const training_state& after,
                     diagnosis& d) {
  if (d.step_skipped || (find(before, "master") == nullptr && before.policy.mode == precision_mode::pure_bf16 &&
                         before.policy.update == pure_bf16_update::stochastic))
    return;
  std::size_t changed = 0, swallowed = 0;
  for (const auto& e : table.entries())
    for (std::size_t i = e.offset; i < e.offset + e.size; ++i) {
      const double w = exact_weight(before, i), delta = exact_weight(after, i) - w;
      if (delta == 0) continue;
      ++changed;
      swallowed += std::fabs(delta) < half_bf16_ulp(w);
    }
  if (changed > 0) d.swallowed_updates_bf16 = double(swallowed) / double(changed);
}

// Each conclude_* below adds the findings and recommendations of one kind of evidence.
void conclude_non_finite(diagnosis& d) {
  const bool fp16 = d.mode == precision_mode::amp_fp16;
  if (d.first_non_finite) {
    const op_observation& o = *d.first_non_finite;
    d.findings.push_back("non-finite values first appear in " + o.op + " (" + (o.backward ? "backward" : "forward") +
                         ", stored as " + name(o.stored) + ")");
    if (fp16 && !o.backward && o.stored == dtype::fp16) {
      d.recommendations.push_back(o.op +
                                  " overflows fp16 in the forward pass: switch to --mode amp_bf16 (fp32's "
                                  "range), or keep that layer in fp32 with --fp32-layers " +
                                  o.layer);
    } else if (fp16 && o.backward) {
      d.recommendations.push_back("gradients overflow fp16 at loss scale " + number(d.scale) +
                                  ": back off the scale (the dynamic scaler does so itself; with a static scale, "
                                  "lower --loss-scale), or switch to --mode amp_bf16");
    } else {
      d.recommendations.push_back("the values are non-finite beyond what a 16-bit format explains (" +
                                  std::string(name(d.mode)) +
                                  "): the run diverged or the weights hold inf/NaN; lower --lr, keep --grad-clip, "
                                  "or resume from an earlier checkpoint");
    }
  }
}

void conclude_fp16_range(diagnosis& d) {
  const bool fp16 = d.mode == precision_mode::amp_fp16;
  std::map<std::string, double> layers;
  bool residual = false;
  for (const auto& o : d.beyond_fp16) {
    layers[o.layer] = std::max(layers[o.layer], o.range.max_abs);
    residual = residual || o.residual_stream;
  }
  if (!layers.empty()) {
    std::string list;
    for (const auto& o : d.beyond_fp16) list += (list.empty() ? "" : ", ") + o.op + " " + number(o.range.max_abs);
    d.findings.push_back("forward values beyond fp16's 65504: " + list);
    if (residual)
      d.recommendations.push_back(
          "the residual stream that feeds LayerNorm exceeds fp16's range: keep LayerNorm and "
          "the residual stream in FP32 (kamp always does; do not move them to fp16)");
    if (fp16 && layers.size() == 1)
      d.recommendations.push_back("only " + layers.begin()->first +
                                  " exceeds fp16: override that one layer to FP32 "
                                  "with --fp32-layers " +
                                  layers.begin()->first);
    else if (fp16)
      d.recommendations.push_back("several layers exceed fp16 (" + std::to_string(layers.size()) +
                                  "): switch to --mode amp_bf16, which has fp32's range");
    else
      d.recommendations.push_back("stay with bf16 or fp32: amp_fp16 would overflow here (or needs --fp32-layers " +
                                  layers.begin()->first + ")");
  }
}

void conclude_gradient_underflow(diagnosis& d) {
  const bool fp16 = d.mode == precision_mode::amp_fp16;
  if (d.gradient_underflow_fp16 > underflow_threshold) {
    d.findings.push_back(percent(d.gradient_underflow_fp16) +
                         " of the gradient values are zero or below fp16's "
                         "smallest subnormal (2^-24) at loss scale " +
                         number(d.scale) + ", " + percent(d.gradient_subnormal_fp16) +
                         " below its smallest normal (2^-14)");
    d.recommendations.push_back(fp16 ? "raise the loss scale: use dynamic loss scaling (the default) or a larger "
                                       "--loss-scale, or switch to --mode amp_bf16"
                                     : "in fp16 these gradients would vanish: amp_fp16 needs loss scaling (keep "
                                       "the default dynamic scaler)");
  }
}

void conclude_swallowed_updates(diagnosis& d) {
  if (d.swallowed_updates_bf16 && *d.swallowed_updates_bf16 > swallowed_threshold) {
    d.findings.push_back(percent(*d.swallowed_updates_bf16) +
                         " of this step's weight updates are smaller than half "
                         "a bf16 ulp of their weight: a bf16 weight rounded to nearest would swallow them");
    d.recommendations.push_back(
        d.mode == precision_mode::pure_bf16
            ? "keep the Kahan compensation (--pure-bf16-update kahan) or stochastic rounding: plain bf16 weights "
              "would stop learning; or return to fp32 master weights with --mode amp_bf16"
            : "keep FP32 master weights (" + std::string(name(d.mode)) +
                  " has them); if memory forces --mode pure_bf16, keep its Kahan compensation or stochastic rounding");
  }
}

void conclude_fp8(diagnosis& d) {
  std::string saturated, collapsed;
  for (const auto& t : d.fp8) {
    const double n = double(std::max<std::size_t>(t.elements, 1));
    const std::string tensor = t.linear + " " + t.role + " (" + name(t.format) + ", scale " + number(t.scale) + ")";
    if (t.saturated / n > fp8_saturation_threshold)
      saturated += (saturated.empty() ? "" : ", ") + tensor + " " + percent(t.saturated / n);
    if (t.underflowed / n > fp8_underflow_threshold)
      collapsed += (collapsed.empty() ? "" : ", ") + tensor + " " + percent(t.underflowed / n);
  }
  if (!saturated.empty()) {
    d.findings.push_back("FP8 casts saturated (clamped at the format's largest value): " + saturated);
    d.recommendations.push_back(
        "the amaxes grew faster than delayed scaling's scales follow: use --fp8-recipe current, or a shorter "
        "--fp8-amax-history; or keep the layer out of FP8 with --fp32-layers");
  }
  if (!collapsed.empty()) {
    d.findings.push_back("FP8 scale collapse: non-zero values became zero in " + collapsed);
    d.recommendations.push_back(
        "a scale sits far below what the data needs (an old amax spike in the delayed history, or gradients "
        "beyond E5M2's range below its smallest subnormal): use --fp8-recipe current or a shorter "
        "--fp8-amax-history, or --fp32-layers for the layer");
  }
}

void conclude(diagnosis& d) {
  conclude_non_finite(d);
  conclude_fp8(d);
  conclude_fp16_range(d);
  conclude_gradient_underflow(d);
  conclude_swallowed_updates(d);
  if (d.findings.empty()) d.findings.push_back("no precision problem in this step");
}

}  // namespace

diagnosis diagnose(trainer& t) {
  const training_state before = t.state();
  diagnosis d;
  d.mode = t.policy().mode;
  d.scale = before.scaler.scale;
  t.model().observe(&d.ops);
  try {
    const step_report r = t.step();
    d.step_skipped = r.skipped;
    d.loss = r.loss;
    t.model().observe(nullptr);
    d.fp8 = t.model().fp8_report();
    measure_gradients(t, d);
    measure_updates(t.model().table(), before, t.state(), d);
  } catch (...) {
    t.model().observe(nullptr);
    t.restore(before);
    throw;
  }
  t.restore(before);
  for (const auto& o : d.ops) {
    if (!d.first_non_finite && o.range.non_finite > 0) d.first_non_finite = o;
    if (!o.backward && o.range.max_abs > fp16_max) d.beyond_fp16.push_back(o);
  }
  conclude(d);
  return d;
}

std::string report(const diagnosis& d) {
  std::ostringstream out;
  out << "precision doctor (" << name(d.mode) << ", loss scale " << number(d.scale) << ", one observed step: loss "
      << number(d.loss) << (d.step_skipped ? ", skipped: inf/NaN gradients" : "") << ")\n";
  char line[160];
  std::snprintf(line, sizeof line, "  %-18s %-8s %-5s %12s %10s\n", "op", "pass", "dtype", "max |x|", "non-finite");
  out << line;
  for (const auto& o : d.ops) {
    std::snprintf(line, sizeof line, "  %-18s %-8s %-5s %12.4g %10llu%s\n", o.op.c_str(),
                  o.backward ? "backward" : "forward", name(o.stored), o.range.max_abs,
                  static_cast<unsigned long long>(o.range.non_finite),
                  !o.backward && o.range.max_abs > fp16_max ? "  > fp16 max" : "");
    out << line;
  }
  if (!d.fp8.empty()) {
    std::snprintf(line, sizeof line, "  %-14s %-7s %-9s %10s %10s %10s %10s\n", "FP8 tensor", "role", "format", "amax",
                  "scale", "saturated", "to zero");
    out << line;
    for (const auto& t : d.fp8) {
      std::snprintf(line, sizeof line, "  %-14s %-7s %-9s %10.4g %10.4g %10u %10u\n", t.linear.c_str(), t.role.c_str(),
                    name(t.format), t.amax, t.scale, t.saturated, t.underflowed);
      out << line;
    }
  }
  out << "  gradients below fp16's smallest subnormal at this scale: " << percent(d.gradient_underflow_fp16)
      << " (below its smallest normal: " << percent(d.gradient_subnormal_fp16) << ")\n";
  out << "  updates smaller than half a bf16 ulp (swallowed by a bf16 weight): "
      << (d.swallowed_updates_bf16 ? percent(*d.swallowed_updates_bf16) : std::string("not observable")) << "\n";
  for (const auto& f : d.findings) out << "  finding: " << f << "\n";
  for (const auto& r : d.recommendations) out << "  recommendation: " << r << "\n";
  return out.str();
}

}  // namespace kamp
