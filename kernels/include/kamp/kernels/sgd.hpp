#ifndef KAMP_KERNELS_SGD_HPP
#define KAMP_KERNELS_SGD_HPP

#include <kamp/kernels/fused_optimizer.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace kamp {

/// SGD hyperparameters; defaults and semantics are torch.optim.SGD's (coupled weight decay).
struct sgd_options {
  float momentum = 0.0f;
  float dampening = 0.0f;
  float weight_decay = 0.0f;
  bool nesterov = false;
};

/// \brief torch.optim.SGD: d = g + wd*w; buf = d on the first step, else momentum*buf +
/// (1 - dampening)*d; the step uses d + momentum*buf (Nesterov) or buf.
struct sgd_rule {
  using hyperparameters = sgd_options;
  static constexpr int moments = 1;
  static constexpr const char* prepare_label = "kamp::sgd::prepare";
  static constexpr const char* update_label = "kamp::sgd::update";
  /// apply's arithmetic per element: decay, momentum, Nesterov, the step, the unscaling factor.
  static constexpr kernel_arithmetic arithmetic{8};

  struct scalars {
    float lr, momentum, dampening, weight_decay;
    int nesterov, first_step;
  };

  static void validate(const hyperparameters& h) {
    const auto fail = [](const std::string& what) { throw std::invalid_argument("kamp::sgd_options: " + what); };
    if (!(h.momentum >= 0.0f)) fail("momentum must be >= 0, got " + std::to_string(h.momentum));
    if (!(h.weight_decay >= 0.0f)) fail("weight_decay must be >= 0, got " + std::to_string(h.weight_decay));
    if (h.nesterov && (h.momentum <= 0.0f || h.dampening != 0.0f))
      fail("nesterov needs momentum > 0 and dampening = 0 (as in torch.optim.SGD)");
  }

  KOKKOS_INLINE_FUNCTION static scalars prepare(const hyperparameters& h, float lr, std::int64_t t) {
    return {lr, h.momentum, h.dampening, h.weight_decay, h.nesterov ? 1 : 0, t == 1 ? 1 : 0};
  }

  KOKKOS_INLINE_FUNCTION static float apply(const scalars& s, float w, float g, float& buf, float&) {
    float d = g + s.weight_decay * w;
    if (s.momentum != 0.0f) {
      buf = s.first_step ? d : s.momentum * buf + (1.0f - s.dampening) * d;
      d = s.nesterov ? d + s.momentum * buf : buf;
    }
    return w - s.lr * d;
  }
};

/// SGD with momentum over flat buffers; see kamp::fused_optimizer.
template <class Model, class Grad, class Moment = float,
          class MemorySpace = typename Kokkos::DefaultExecutionSpace::memory_space>
using sgd = fused_optimizer<sgd_rule, Model, Grad, Moment, MemorySpace>;

}  // namespace kamp

#endif
