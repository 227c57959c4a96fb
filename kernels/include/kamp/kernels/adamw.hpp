#ifndef KAMP_KERNELS_ADAMW_HPP
#define KAMP_KERNELS_ADAMW_HPP

#include <kamp/kernels/fused_optimizer.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace kamp {

/// AdamW hyperparameters; defaults are torch.optim.AdamW's. The betas are doubles, as in
/// PyTorch, so that 1 - beta is formed in double and rounded once (0.1, not the 0.100000024 of
/// 1 - 0.9f): the moments then match torch.optim.AdamW's without a 2.4e-7 relative bias.
struct adamw_options {
  double beta1 = 0.9;
  double beta2 = 0.999;
  float eps = 1e-8f;
  float weight_decay = 0.01f;
};

/// \brief The AdamW update of torch.optim.AdamW (decoupled weight decay, bias correction, eps
/// added after the bias-corrected square root), one element at a time in fp32.
struct adamw_rule {
  using hyperparameters = adamw_options;
  static constexpr int moments = 2;
  static constexpr const char* prepare_label = "kamp::adamw::prepare";
  static constexpr const char* update_label = "kamp::adamw::update";
  /// apply's arithmetic per element: the moments (5), the denominator (1, a square root), the
  /// decayed step (3, a division), and the unscaling factor (1).
  static constexpr kernel_arithmetic arithmetic{10, 0, 1, 1};

  struct scalars {
    float decay;           ///< 1 - lr * weight_decay
    float step_size;       ///< lr / (1 - beta1^t)
    float inv_bias2_sqrt;  ///< 1 / sqrt(1 - beta2^t)
    float beta1, beta2, one_minus_beta1, one_minus_beta2, eps;
  };

  static void validate(const hyperparameters& h) {
    const auto fail = [](const std::string& what) { throw std::invalid_argument("kamp::adamw_options: " + what); };
    if (!(h.beta1 >= 0.0 && h.beta1 < 1.0)) fail("beta1 must be in [0, 1), got " + std::to_string(h.beta1));
    if (!(h.beta2 >= 0.0 && h.beta2 < 1.0)) fail("beta2 must be in [0, 1), got " + std::to_string(h.beta2));
    if (!(h.eps > 0.0f)) fail("eps must be > 0, got " + std::to_string(h.eps));
    if (!(h.weight_decay >= 0.0f)) fail("weight_decay must be >= 0, got " + std::to_string(h.weight_decay));
  }

  KOKKOS_INLINE_FUNCTION static scalars prepare(const hyperparameters& h, float lr, std::int64_t t) {
    const double bias1 = 1.0 - pow(h.beta1, static_cast<double>(t));
    const double bias2 = 1.0 - pow(h.beta2, static_cast<double>(t));
    return {1.0f - lr * h.weight_decay,
            static_cast<float>(lr / bias1),
            static_cast<float>(1.0 / sqrt(bias2)),
            static_cast<float>(h.beta1),
            static_cast<float>(h.beta2),
            static_cast<float>(1.0 - h.beta1),
            static_cast<float>(1.0 - h.beta2),
            h.eps};
  }

  KOKKOS_INLINE_FUNCTION static float apply(const scalars& s, float w, float g, float& m, float& v) {
    m = s.beta1 * m + s.one_minus_beta1 * g;
    v = s.beta2 * v + s.one_minus_beta2 * g * g;
    // torch divides by sqrt(1 - beta2^t); multiplying by its reciprocal differs by at most an
    // ulp and saves a division per element on the CPU's bandwidth-bound path.
    const float denom = sqrtf(v) * s.inv_bias2_sqrt + s.eps;
    return w * s.decay - s.step_size * m / denom;
  }
};

/// AdamW over flat buffers; see kamp::fused_optimizer.
template <class Model, class Grad, class Moment = float,
          class MemorySpace = typename Kokkos::DefaultExecutionSpace::memory_space>
using adamw = fused_optimizer<adamw_rule, Model, Grad, Moment, MemorySpace>;

}  // namespace kamp

#endif
