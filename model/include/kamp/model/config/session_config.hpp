#ifndef KAMP_MODEL_CONFIG_SESSION_CONFIG_HPP
#define KAMP_MODEL_CONFIG_SESSION_CONFIG_HPP

#include <kamp/kernels/adamw.hpp>
#include <kamp/kernels/nn/activation.hpp>
#include <kamp/kernels/nn/regression_loss.hpp>
#include <kamp/kernels/sgd.hpp>
#include <kamp/model/config/precision_policy.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kamp {

/// \brief A multi-layer perceptron: Linear layers of `layer_sizes` [in, hidden..., out], the
/// activation after every hidden layer (none after the last), optionally a LayerNorm before
/// each hidden activation and a skip connection around hidden layers whose input and output
/// widths agree (a residual block). TorchFort's `mlp` is layer_sizes with ReLU.
struct mlp_config {
  std::vector<int> layer_sizes;
  activation_function hidden_activation = activation_function::relu;
  bool layernorm = false;
  bool residual = false;

  int inputs() const { return layer_sizes.front(); }
  int outputs() const { return layer_sizes.back(); }
  int layers() const { return int(layer_sizes.size()) - 1; }
  /// Whether hidden layer l (0-based Linear index, l < layers() - 1) adds its input.
  bool residual_at(int l) const { return residual && layer_sizes[l] == layer_sizes[l + 1]; }
};

enum class session_optimizer { adamw, sgd };

/// \brief The learning rate after `taken` optimizer steps, evaluated on the device by the fused
/// optimizer: PyTorch's schedulers of the same names, in closed form.
struct session_lr_schedule {
  enum class kind { constant, step, cosine_annealing, linear };
  kind type = kind::constant;
  double base = 1e-3;
  double step_size = 1, gamma = 0.1;                         // step
  double t_max = 1, eta_min = 0;                             // cosine_annealing
  double start_factor = 1.0 / 3, end_factor = 1, total = 5;  // linear

  KOKKOS_INLINE_FUNCTION float operator()(std::int64_t taken) const {
    const double t = double(taken);
    switch (type) {
      case kind::step:
        return float(base * pow(gamma, floor(t / step_size)));
      case kind::cosine_annealing:
        return float(eta_min + (base - eta_min) * (1.0 + cos(3.141592653589793 * t / t_max)) / 2.0);
      case kind::linear:
        return float(base * (start_factor + (end_factor - start_factor) * (t < total ? t : total) / total));
      default:
        return float(base);
    }
  }
};

/// \brief Everything a training session is built from: the network, loss, optimizer, schedule and
/// precision. Read from kamp's own keys or a TorchFort YAML file (docs/science-codes.md maps them).
struct session_config {
  mlp_config model;
  regression_loss_kind loss = regression_loss_kind::mse;
  session_optimizer optimizer = session_optimizer::adamw;
  adamw_options adamw;  ///< TorchFort's `adam` with weight_decay 0 is the same update
  sgd_options sgd;
  session_lr_schedule lr;
  float max_grad_norm = 0;  ///< 0: no clipping
  int grad_accumulation_steps = 1;
  precision_mode mode = precision_mode::fp32;
  std::uint64_t seed = 0;  ///< initial weights (PyTorch Linear's uniform bounds)
  std::string text;        ///< the config as given, kept in checkpoints

  /// Parses a YAML or JSON document (JSON is YAML); every problem throws std::invalid_argument
  /// naming `where`, the line and the key, and what is accepted instead.
  static session_config parse(const std::string& text, const std::string& where = "config");
  /// Reads and parses a file.
  static session_config from_file(const std::string& path);
};

}  // namespace kamp

#endif
