#include <kamp/model/config/session_config.hpp>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

namespace kamp {

namespace {

// One reader per document: every error names the file, the line and the key path.
class reader {
 public:
  explicit reader(std::string where) : where_(std::move(where)) {}

  [[noreturn]] void fail(const YAML::Node& at, const std::string& what) const {
    const auto mark = at.Mark();
    throw std::invalid_argument(where_ + (mark.line >= 0 ? ":" + std::to_string(mark.line + 1) : std::string()) + ": " +
                                what);
  }

  /// A mapping whose keys must all be in `known`; a missing optional block is an empty map.
  YAML::Node map(const YAML::Node& parent, const std::string& key, const std::string& path,
                 const std::set<std::string>& known) const {
    const YAML::Node node = parent[key];
    if (!node) return YAML::Node(YAML::NodeType::Map);
    if (!node.IsMap()) fail(node, "'" + path + "' must be a mapping of keys");
    check_keys(node, path, known);
    return node;
  }

  void check_keys(const YAML::Node& node, const std::string& path, const std::set<std::string>& known) const {
    for (const auto& kv : node) {
      const std::string k = kv.first.as<std::string>();
      if (known.count(k) == 0) {
        std::string list;
        for (const auto& s : known) list += (list.empty() ? "" : ", ") + s;
        fail(kv.first, "unknown key '" + (path.empty() ? k : path + "." + k) + "' (known here: " + list + ")");
      }
    }
  }

  template <class T>
  T scalar(const YAML::Node& node, const std::string& path) const {
    if (!node.IsScalar()) fail(node, "'" + path + "' must be a single value");
    try {
      return node.as<T>();
    } catch (const YAML::Exception&) {
      fail(node, "'" + path + "' = '" + node.Scalar() + "' is not " + kind<T>());
    }
  }
  template <class T>
  T scalar_or(const YAML::Node& parent, const std::string& key, const std::string& path, T fallback) const {
    const YAML::Node node = parent[key];
    return node ? scalar<T>(node, path + "." + key) : fallback;
  }
  /// A number; TorchFort writes booleans as 0/1, so integers are taken for flags too.
  bool flag_or(const YAML::Node& parent, const std::string& key, const std::string& path, bool fallback) const {
    const YAML::Node node = parent[key];
    if (!node) return fallback;
    const std::string s = lower(scalar<std::string>(node, path + "." + key));
    if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
    if (s == "0" || s == "false" || s == "no" || s == "off") return false;
    fail(node, "'" + path + "." + key + "' = '" + node.Scalar() + "' is not a flag (true/false or 1/0)");
  }
  /// A finite number in [lo, hi] (or (lo, hi] where `open_low`).
  double number_or(const YAML::Node& parent, const std::string& key, const std::string& path, double fallback,
                   double lo, double hi, bool open_low = false) const {
    const YAML::Node node = parent[key];
    if (!node) return fallback;
    const double v = scalar<double>(node, path + "." + key);
    if (!std::isfinite(v) || v < lo || v > hi || (open_low && v == lo))
      fail(node, "'" + path + "." + key + "' = " + node.Scalar() + " must be finite and in " + (open_low ? "(" : "[") +
                     format(lo) + ", " + format(hi) + "]");
    return v;
  }

  static std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return s;
  }

 private:
  template <class T>
  static const char* kind() {
    if constexpr (std::is_same_v<T, bool>) return "true or false";
    if constexpr (std::is_integral_v<T>) return "an integer";
    if constexpr (std::is_floating_point_v<T>) return "a number";
    return "a string";
  }
  static std::string format(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  }
  std::string where_;
};

activation_function parse_activation(const reader& r, const YAML::Node& node) {
  const std::string s = reader::lower(r.scalar<std::string>(node, "model.parameters.activation"));
  for (const activation_function a : {activation_function::relu, activation_function::gelu, activation_function::tanh,
                                      activation_function::silu, activation_function::identity})
    if (s == name(a)) return a;
  r.fail(node, "model.parameters.activation '" + node.Scalar() + "' is not one of relu, gelu, tanh, silu, identity");
}

void parse_model(const reader& r, const YAML::Node& root, session_config& c) {
  const YAML::Node model = r.map(root, "model", "model", {"type", "parameters"});
  if (!model["type"]) r.fail(root, "'model.type' is missing: kamp's session builds type: mlp");
  const std::string type = reader::lower(r.scalar<std::string>(model["type"], "model.type"));
  if (type != "mlp")
    r.fail(model["type"], "model.type '" + model["type"].Scalar() +
                              "' is not a network kamp builds (mlp); TorchScript models are not read");
  const YAML::Node p =
      r.map(model, "parameters", "model.parameters",
            {"layer_sizes", "dropout", "flatten_non_batch_dims", "activation", "layernorm", "residual"});
  const YAML::Node sizes = p["layer_sizes"];
  if (!sizes || !sizes.IsSequence() || sizes.size() < 2)
    r.fail(sizes ? sizes : p,
           "model.parameters.layer_sizes must list at least the input and output sizes, e.g. [4, 64, 1]");
  for (const auto& s : sizes) {
    const long long v = r.scalar<long long>(s, "model.parameters.layer_sizes");
    if (v < 1 || v > (1 << 24)) r.fail(s, "model.parameters.layer_sizes entries must be in [1, 16777216]");
    c.model.layer_sizes.push_back(int(v));
  }
  if (r.number_or(p, "dropout", "model.parameters", 0.0, 0.0, 1.0) != 0.0)
    r.fail(p["dropout"],
           "model.parameters.dropout must be 0: kamp's MLP has no dropout (a surrogate trained online "
           "rarely uses it); remove the key or set it to 0");
  if (!r.flag_or(p, "flatten_non_batch_dims", "model.parameters", true))
    r.fail(p["flatten_non_batch_dims"],
           "model.parameters.flatten_non_batch_dims must be true: inputs are (batch, "
           "features) matrices");
  if (p["activation"]) c.model.hidden_activation = parse_activation(r, p["activation"]);
  c.model.layernorm = r.flag_or(p, "layernorm", "model.parameters", false);
  c.model.residual = r.flag_or(p, "residual", "model.parameters", false);
}

void parse_loss(const reader& r, const YAML::Node& root, session_config& c) {
  const YAML::Node loss = r.map(root, "loss", "loss", {"type", "parameters"});
  if (loss["type"]) {
    const std::string type = reader::lower(r.scalar<std::string>(loss["type"], "loss.type"));
    if (type == "mse")
      c.loss = regression_loss_kind::mse;
    else if (type == "l1")
      c.loss = regression_loss_kind::l1;
    else
      r.fail(loss["type"], "loss.type '" + loss["type"].Scalar() + "' is not MSE or L1");
  }
  const YAML::Node p = r.map(loss, "parameters", "loss.parameters", {"reduction"});
  if (p["reduction"] && reader::lower(r.scalar<std::string>(p["reduction"], "loss.parameters.reduction")) != "mean")
    r.fail(p["reduction"], "loss.parameters.reduction must be mean");
}

void parse_optimizer(const reader& r, const YAML::Node& root, session_config& c) {
  const YAML::Node opt = r.map(root, "optimizer", "optimizer", {"type", "parameters", "general"});
  std::string type = "adam";
  if (opt["type"]) type = reader::lower(r.scalar<std::string>(opt["type"], "optimizer.type"));
  if (type != "adam" && type != "adamw" && type != "sgd")
    r.fail(opt["type"], "optimizer.type '" + opt["type"].Scalar() + "' is not adam, adamw or sgd");
  const YAML::Node p = r.map(opt, "parameters", "optimizer.parameters",
                             {"learning_rate", "beta1", "beta2", "eps", "weight_decay", "amsgrad", "momentum",
                              "dampening", "nesterov", "max_grad_norm"});
  const std::string at = "optimizer.parameters";
  c.lr.base = r.number_or(p, "learning_rate", at, 1e-3, 0.0, 1e6);
  c.max_grad_norm = float(r.number_or(p, "max_grad_norm", at, 0.0, 0.0, 1e30));
  const double decay = r.number_or(p, "weight_decay", at, type == "adamw" ? 0.01 : 0.0, 0.0, 1e6);
  if (type == "sgd") {
    c.optimizer = session_optimizer::sgd;
    for (const char* k : {"beta1", "beta2", "eps", "amsgrad"})
      if (p[k])
        r.fail(p[k], std::string("optimizer.parameters.") + k +
                         " is an Adam parameter; sgd takes "
                         "learning_rate, momentum, dampening, nesterov, weight_decay");
    c.sgd.momentum = float(r.number_or(p, "momentum", at, 0.0, 0.0, 1.0));
    c.sgd.dampening = float(r.number_or(p, "dampening", at, 0.0, 0.0, 1.0));
    c.sgd.nesterov = r.flag_or(p, "nesterov", at, false);
    c.sgd.weight_decay = float(decay);
  } else {
    c.optimizer = session_optimizer::adamw;
    for (const char* k : {"momentum", "dampening", "nesterov"})
      if (p[k])
        r.fail(p[k], std::string("optimizer.parameters.") + k + " is an SGD parameter; " + type +
                         " takes learning_rate, beta1, beta2, eps, weight_decay");
    if (r.flag_or(p, "amsgrad", at, false))
      r.fail(p["amsgrad"], "optimizer.parameters.amsgrad must be 0: kamp's Adam has no AMSGrad variant");
    if (type == "adam" && decay != 0.0)
      r.fail(p["weight_decay"],
             "optimizer.type adam with weight_decay adds it to the gradient (torch.optim.Adam's L2 "
             "penalty), which kamp does not implement: use type: adamw (decoupled decay) or "
             "weight_decay: 0");
    c.adamw.beta1 = r.number_or(p, "beta1", at, 0.9, 0.0, 1.0);
    c.adamw.beta2 = r.number_or(p, "beta2", at, 0.999, 0.0, 1.0);
    c.adamw.eps = float(r.number_or(p, "eps", at, 1e-8, 0.0, 1.0, true));
    c.adamw.weight_decay = float(decay);
  }
  const YAML::Node g = r.map(opt, "general", "optimizer.general", {"grad_accumulation_steps"});
  const long long steps = r.scalar_or<long long>(g, "grad_accumulation_steps", "optimizer.general", 1);
  if (steps < 1 || steps > 1000000)
    r.fail(g["grad_accumulation_steps"], "optimizer.general.grad_accumulation_steps must be in [1, 1000000]");
  c.grad_accumulation_steps = int(steps);
}

void parse_schedule(const reader& r, const YAML::Node& root, session_config& c) {
  const YAML::Node s = r.map(root, "lr_scheduler", "lr_scheduler", {"type", "parameters"});
  if (!s["type"]) return;
  const std::string type = reader::lower(r.scalar<std::string>(s["type"], "lr_scheduler.type"));
  const std::string at = "lr_scheduler.parameters";
  using kind = session_lr_schedule::kind;
  if (type == "constant") {
    r.map(s, "parameters", at, {});
    c.lr.type = kind::constant;
  } else if (type == "step") {
    const YAML::Node p = r.map(s, "parameters", at, {"step_size", "gamma"});
    c.lr.type = kind::step;
    c.lr.step_size = r.number_or(p, "step_size", at, 1, 1, 1e12);
    c.lr.gamma = r.number_or(p, "gamma", at, 0.1, 0, 1e6);
  } else if (type == "cosine_annealing") {
    const YAML::Node p = r.map(s, "parameters", at, {"T_max", "eta_min"});
    if (!p["T_max"]) r.fail(s, "lr_scheduler cosine_annealing needs parameters.T_max (steps to the minimum)");
    c.lr.type = kind::cosine_annealing;
    c.lr.t_max = r.number_or(p, "T_max", at, 1, 1, 1e12);
    c.lr.eta_min = r.number_or(p, "eta_min", at, 0, 0, 1e6);
  } else if (type == "linear") {
    const YAML::Node p = r.map(s, "parameters", at, {"start_factor", "end_factor", "total_iters"});
    c.lr.type = kind::linear;
    c.lr.start_factor = r.number_or(p, "start_factor", at, 1.0 / 3, 0, 1, true);
    c.lr.end_factor = r.number_or(p, "end_factor", at, 1, 0, 1);
    c.lr.total = r.number_or(p, "total_iters", at, 5, 1, 1e12);
  } else {
    r.fail(s["type"], "lr_scheduler.type '" + s["type"].Scalar() +
                          "' is not one kamp evaluates on the device: constant, step, cosine_annealing, linear");
  }
}

}  // namespace

session_config session_config::parse(const std::string& text, const std::string& where) {
  const reader r(where);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw std::invalid_argument(where + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML or JSON: " + e.msg);
  }
  if (!root.IsMap()) r.fail(root, "the config must be a mapping with a 'model' block (YAML or JSON)");
  r.check_keys(root, "", {"general", "model", "loss", "optimizer", "lr_scheduler", "precision", "seed"});
  session_config c;
  c.text = text;
  // TorchFort's general block (reporting, wandb) has no effect here: kamp reports through the session.
  r.map(root, "general", "general", {"report_frequency", "enable_wandb_hook", "verbose"});
  parse_model(r, root, c);
  parse_loss(r, root, c);
  parse_optimizer(r, root, c);
  parse_schedule(r, root, c);
  if (root["precision"]) {
    const std::string mode = r.scalar<std::string>(root["precision"], "precision");
    try {
      c.mode = parse_precision_mode(mode);
    } catch (const std::invalid_argument& e) {
      r.fail(root["precision"], e.what());
    }
    if (c.mode == precision_mode::amp_fp8)
      r.fail(root["precision"],
             "precision amp_fp8 trains the GPT only so far; a session takes fp32, amp_bf16, "
             "amp_fp16 or pure_bf16");
  }
  c.seed = r.scalar_or<std::uint64_t>(root, "seed", "seed", 0);
  return c;
}

session_config session_config::from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot open session config '" + path + "': check the path");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw std::invalid_argument("cannot read session config '" + path + "'");
  return parse(text.str(), path);
}

}  // namespace kamp
