#include <kamp/kernels/detail/fence.hpp>
#include <kamp/model/training/session.hpp>

#include <kamp/kernels/adamw.hpp>
#include <kamp/kernels/cast.hpp>
#include <kamp/kernels/execution_spaces.hpp>
#include <kamp/kernels/loss_scaler.hpp>
#include <kamp/kernels/nn/regression_loss.hpp>
#include <kamp/kernels/sgd.hpp>
#include <kamp/kernels/unscale_and_check.hpp>
#include <kamp/model/network/mlp.hpp>
#include <kamp/model/state/checkpoint.hpp>
#include <kamp/model/state/file_rules.hpp>

#include "../state/hdf5.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <vector>

namespace kamp {

const char* name(skip_cause c) {
  switch (c) {
    case skip_cause::none:
      return "none";
    case skip_cause::non_finite_inputs:
      return "non-finite inputs";
    case skip_cause::non_finite_labels:
      return "non-finite labels";
    case skip_cause::non_finite_gradients:
      return "non-finite gradients";
  }
  return "?";
}

namespace detail {

namespace {

constexpr const char* session_format = "kamp-session";
constexpr std::int64_t session_format_version = 1;

/// Only amp_fp16 scales the loss (bf16 has fp32's range, as torch.autocast has it); the other
/// modes keep a static scale of 1, whose scaler still counts the skipped steps.
loss_scaler_options scaling_for(precision_mode mode) {
  loss_scaler_options o;
  if (mode != precision_mode::amp_fp16) {
    o.init_scale = 1.0f;
    o.dynamic = false;
  }
  return o;
}

/// fp32: the weights are the fp32 copy itself; pure_bf16: bf16 weights with Kahan compensation;
/// the amp modes: fp32 master weights and a rounded copy for the GEMMs.
weight_update update_for(precision_mode mode) {
  switch (mode) {
    case precision_mode::fp32:
      return weight_update::nearest;
    case precision_mode::pure_bf16:
      return weight_update::kahan;
    default:
      return weight_update::master;
  }
}

template <class T, class ExecutionSpace>
class mlp_engine final : public session_engine<ExecutionSpace> {
  using base = session_engine<ExecutionSpace>;
  using memory = typename ExecutionSpace::memory_space;
  using staging = typename base::staging;
  using flag = typename base::flag;
  using adam_type = adamw<T, float, float, memory>;
  using sgd_type = sgd<T, float, float, memory>;

 public:
  mlp_engine(const session_config& config, const ExecutionSpace& space, const dist::communicator& ranks)
      : space_(space),
        config_(config),
        ranks_(ranks),
        net_(config.model, space),
        scaler_(scaling_for(config.mode)),
        check_("kamp::session::check"),
        loss_("kamp::session::loss"),
        bad_inputs_("kamp::session::bad_inputs"),
        bad_labels_("kamp::session::bad_labels") {
    const std::size_t n = table().flat_size();
    const weight_update update = update_for(config.mode);
    if (config.optimizer == session_optimizer::adamw)
      adam_ = std::make_unique<adam_type>(n, config.adamw, update);
    else
      sgd_ = std::make_unique<sgd_type>(n, config.sgd, update);
    model_ = Kokkos::View<T*, memory>("kamp::session::model", n);
    grads_ = Kokkos::View<float*, memory>("kamp::session::grads", n);
    if (!has_master() && !std::is_same_v<T, float>)
      widened_ = Kokkos::View<float*, memory>("kamp::session::vectors", n);
    initialize(initial_weights());
  }

  staging staged_inputs(int n) override {
    net_.reserve(n);
    if constexpr (std::is_same_v<T, float>) {
      return net_.input(n);  // fp32: the inputs are converted straight into the first GEMM's operand
    } else {
      grow(inputs32_, "kamp::session::inputs", n, config_.model.inputs());
      return Kokkos::subview(inputs32_, std::make_pair(0, n), Kokkos::ALL);
    }
  }
  staging staged_labels(int n) override {
    grow(labels32_, "kamp::session::labels", n, config_.model.outputs());
    return Kokkos::subview(labels32_, std::make_pair(0, n), Kokkos::ALL);
  }
  flag inputs_non_finite() const override { return bad_inputs_; }
  flag labels_non_finite() const override { return bad_labels_; }

  void train_staged(int n) override {
    load_inputs(n);
    if (micro_ == 0) Kokkos::deep_copy(space_, grads_, 0.0f);
    net_.forward(model_, vectors(), n);
    const double per_element = 1.0 / (double(n) * double(config_.model.outputs()) *
                                      double(config_.grad_accumulation_steps) * double(ranks_.size()));
    regression_loss(space_, config_.loss, net_.output(n), staged_labels(n), loss_, net_.output_gradient(n), per_element,
                    scaler_.state());
    net_.backward(model_, vectors(), grads_, n);
    ++train_steps_;
    if (++micro_ < config_.grad_accumulation_steps) return;
    micro_ = 0;
    if (ranks_.distributed()) sum_gradients_over_ranks();
    // The AMP step: one pass unscales (amp_fp16) and finds inf/NaN and the norm, the optimizer
    // skips itself on inf/NaN and clips, the scaler updates: all on the device.
    const bool scaled = config_.mode == precision_mode::amp_fp16;
    unscale_and_check(space_, grads_, scaler_.state(), check_, unscale_options{scaled, true});
    const gradient_control<memory> control{scaler_.state(), check_, scaled, config_.max_grad_norm};
    with_optimizer([&](const auto& o) { o.step(space_, model_, grads_, control, config_.lr); });
    scaler_.update(space_, check_);
    refresh_vectors();
  }

  staging predict_staged(int n) override {
    load_inputs(n);
    net_.forward(model_, vectors(), n);
    return net_.output(n);
  }

  Kokkos::View<const double, memory> loss() const override { return loss_; }

  session_report report() const override {
    session_report r;
    r.train_steps = train_steps_;
    const loss_scale_state s = scaler_.host_state();
    r.skipped_steps = s.skipped_steps;
    r.loss_scale = s.scale;
    with_optimizer([&](const auto& o) {
      r.optimizer_steps = o.host_step_count();
      r.grad_norm = s.steps > 0 ? o.host_last_grad_norm() : 0.0f;
    });
    Kokkos::deep_copy(r.loss, loss_);
    if (s.last_step_skipped != 0) {
      int inputs = 0, labels = 0;
      Kokkos::deep_copy(inputs, bad_inputs_);
      Kokkos::deep_copy(labels, bad_labels_);
      r.last_cause = inputs > 0   ? skip_cause::non_finite_inputs
                     : labels > 0 ? skip_cause::non_finite_labels
                                  : skip_cause::non_finite_gradients;
    }
    return r;
  }

  const tensor_table& table() const override { return net_.parameters().table; }

  std::vector<float> weights() const override;
  void save(const std::string& path) const override;
  void load(const std::string& path) override;

 private:
  bool has_master() const { return update_for(config_.mode) == weight_update::master; }
  void write(const std::string& path) const;

  /// Every rank's gradients summed into every rank's buffer: a reduce-scatter over the flat
  /// buffer's equal shards and an all-gather of the sums (the all-reduce of data parallelism).
  void sum_gradients_over_ranks() {
    detail::fence(space_, "MPI reads the gradients");
    std::vector<std::size_t> counts;
    std::vector<element_range> parts;
    for (int r = 0; r < ranks_.size(); ++r) {
      parts.push_back(table().shard(r, ranks_.size()));
      counts.push_back(parts.back().size());
    }
    ranks_.reduce_scatter_sum(grads_.data(), counts, dtype::fp32);
    ranks_.all_gather(grads_.data(), sizeof(float), parts);
  }

  template <class F>
  void with_optimizer(const F& f) const {
    if (adam_)
      f(*adam_);
    else
      f(*sgd_);
  }

  /// The fp32 values of the biases and norms: the master weights, the fp32 weights themselves,
  /// or (pure_bf16) a widened copy refreshed after each step.
  Kokkos::View<const float*, memory> vectors() const {
    if (has_master()) {
      Kokkos::View<float*, memory> m;
      with_optimizer([&](const auto& o) { m = o.master(); });
      return m;
    }
    if constexpr (std::is_same_v<T, float>)
      return model_;
    else
      return widened_;
  }
  void refresh_vectors() const {
    if constexpr (!std::is_same_v<T, float>) {
      if (has_master()) return;
      const auto range = net_.parameters().vectors.pair();
      cast(space_, Kokkos::subview(widened_, range), Kokkos::subview(model_, range), rounding_options{},
           Kokkos::View<std::size_t, memory>());
    }
  }

  void load_inputs(int n) {
    if constexpr (!std::is_same_v<T, float>) {
      const auto staged = staged_inputs(n);
      const auto input = net_.input(n);
      cast(space_, Kokkos::View<T*, memory, Kokkos::MemoryUnmanaged>(input.data(), input.size()),
           Kokkos::View<const float*, memory, Kokkos::MemoryUnmanaged>(staged.data(), staged.size()),
           rounding_options{}, Kokkos::View<std::size_t, memory>());
    }
  }

  static void grow(Kokkos::View<float**, Kokkos::LayoutRight, memory>& v, const char* label, int n, int cols) {
    if (int(v.extent(0)) < n)
      v = Kokkos::View<float**, Kokkos::LayoutRight, memory>(std::string(label), std::size_t(n), std::size_t(cols));
  }

  /// PyTorch's nn.Linear initialization (weights and biases uniform in ±1/√fan_in, from the
  /// session's seed), LayerNorm's scale 1 and shift 0; fp32 on the host.
  std::vector<float> initial_weights() const {
    const mlp_parameters& p = net_.parameters();
    std::vector<float> w(p.table.flat_size(), 0.0f);
    std::mt19937_64 rng(config_.seed);
    for (const auto& layer : p.layers) {
      const float bound = 1.0f / std::sqrt(float(layer.in));
      std::uniform_real_distribution<float> u(-bound, bound);
      for (const std::size_t i : {layer.weight, layer.bias})
        for (std::size_t k = 0; k < p.table[i].size; ++k) w[p.table[i].offset + k] = u(rng);
      if (layer.norm_weight != mlp_parameters::none)
        for (std::size_t k = 0; k < p.table[layer.norm_weight].size; ++k)
          w[p.table[layer.norm_weight].offset + k] = 1.0f;
    }
    return w;
  }

  /// Sets the weights from exact fp32 values (the master or fp32 weights take them as they are,
  /// the 16-bit copy rounded once).
  void initialize(const std::vector<float>& weights) {
    Kokkos::View<float*, memory> exact("kamp::session::exact", weights.size());
    Kokkos::deep_copy(
        exact, Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(weights.data(), weights.size()));
    with_optimizer([&](const auto& o) { o.initialize(space_, exact, model_); });
    refresh_vectors();
    detail::fence(space_, "the caller's weights may change after this call");
  }

  ExecutionSpace space_;
  session_config config_;
  dist::communicator ranks_;
  mlp<T, ExecutionSpace> net_;
  std::unique_ptr<adam_type> adam_;
  std::unique_ptr<sgd_type> sgd_;
  loss_scaler<memory> scaler_;
  Kokkos::View<T*, memory> model_;
  Kokkos::View<float*, memory> grads_, widened_;
  Kokkos::View<gradient_check, memory> check_;
  Kokkos::View<double, memory> loss_;
  flag bad_inputs_, bad_labels_;
  Kokkos::View<float**, Kokkos::LayoutRight, memory> inputs32_, labels32_;
  std::int64_t train_steps_ = 0;
  int micro_ = 0;
};

// ---- checkpoints -------------------------------------------------------------------------

/// What a session file holds besides the configuration: one place for the writer and the reader.
struct session_file_names {
  static constexpr const char* weights = "model";
  static constexpr const char* state = "optimizer";
};

template <class V>
std::vector<typename V::non_const_value_type> host_copy(const V& v) {
  std::vector<typename V::non_const_value_type> h(v.extent(0));
  if (!h.empty())
    Kokkos::deep_copy(
        Kokkos::View<typename V::non_const_value_type*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(h.data(), h.size()),
        v);
  return h;
}

template <class E>
constexpr dtype dtype_of() {
  if constexpr (std::is_same_v<E, bf16>)
    return dtype::bf16;
  else if constexpr (std::is_same_v<E, fp16>)
    return dtype::fp16;
  else
    return dtype::fp32;
}

template <class E>
void write_flat(hid_t group, const std::string& group_name, const std::string& name, const std::vector<E>& values,
                const std::vector<std::size_t>& shape) {
  const std::string path = group_name + "/" + name;
  const std::uint64_t hash =
      h5::content_hash(values.data(), dtype_of<E>(), 0, values.size()) + h5::identity_hash(path, dtype_of<E>(), shape);
  h5::write_dataset(group, name, dtype_of<E>(), shape, values.data(), {0, values.size()}, hash, false);
}

template <class E>
std::vector<E> read_flat(hid_t group, const std::string& group_name, const std::string& name,
                         const std::vector<std::size_t>& shape, const std::string& file) {
  std::size_t count = 1;
  for (const auto d : shape) count *= d;
  const std::string path = group_name + "/" + name, where = "'" + file + "' " + path;
  const h5::handle set = h5::open_dataset(group, name, dtype_of<E>(), shape, where);
  std::vector<E> values(count);
  h5::read_elements(set, dtype_of<E>(), shape, values.data(), {0, count}, where);
  const std::uint64_t stored = h5::read_uint_attribute(set.get(), "content_hash", where);
  if (stored !=
      h5::content_hash(values.data(), dtype_of<E>(), 0, count) + h5::identity_hash(path, dtype_of<E>(), shape))
    throw checkpoint_error(where + ": its content does not match its hash (the file was changed or damaged)");
  return values;
}

template <class T, class ExecutionSpace>
std::vector<float> mlp_engine<T, ExecutionSpace>::weights() const {
  detail::fence(space_, "the host reads the weights");
  std::vector<float> exact;
  if (has_master()) {
    with_optimizer([&](const auto& o) { exact = host_copy(o.master()); });
  } else {
    const auto model = host_copy(model_);
    exact.resize(model.size());
    for (std::size_t i = 0; i < model.size(); ++i) exact[i] = load_as<float>(&model[i]);
  }
  return exact;
}

template <class T, class ExecutionSpace>
void mlp_engine<T, ExecutionSpace>::save(const std::string& path) const {
  // Every rank holds the same state: rank 0 writes it, and every rank learns whether it could.
  std::string error;
  if (ranks_.rank() == 0) {
    try {
      write(path);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (!ranks_.all(error.empty()))
    throw checkpoint_error(error.empty() ? "rank 0 could not save '" + path + "'" : error);
}

template <class T, class ExecutionSpace>
void mlp_engine<T, ExecutionSpace>::write(const std::string& path) const {
  const tensor_table& t = table();
  const std::vector<float> exact = weights();
  // The project's output rule: never an input, a directory, a device or FIFO, or another user's
  // file; a leftover or planted link at the temporary name is removed (the link, not its target).
  check_output({"session checkpoint", path}, output_kind::document);
  const std::string tmp = path + ".tmp";
  if (const std::string leftover = clear_temporary_path(tmp); !leftover.empty()) throw checkpoint_error(leftover);
  {
    h5::handle file = h5::create_file(tmp);
    h5::write_attribute(file.get(), "format", std::string(session_format));
    h5::write_attribute(file.get(), "version", session_format_version);
    h5::write_attribute(file.get(), "config", config_.text);
    h5::write_attribute(file.get(), "train_steps", std::int64_t(train_steps_));
    h5::write_attribute(file.get(), "micro_step", std::int64_t(micro_));
    const loss_scale_state s = scaler_.host_state();
    h5::write_attribute(file.get(), "scale", double(s.scale));
    h5::write_attribute(file.get(), "growth_tracker", std::int64_t(s.growth_tracker));
    h5::write_attribute(file.get(), "hysteresis_left", std::int64_t(s.hysteresis_left));
    h5::write_attribute(file.get(), "last_step_skipped", std::int64_t(s.last_step_skipped));
    h5::write_attribute(file.get(), "scaler_steps", s.steps);
    h5::write_attribute(file.get(), "skipped_steps", s.skipped_steps);
    {
      const h5::handle weights = h5::create_group(file.get(), session_file_names::weights);
      for (const auto& e : t.entries())
        write_flat(weights.get(), session_file_names::weights, e.name,
                   std::vector<float>(exact.begin() + std::ptrdiff_t(e.offset),
                                      exact.begin() + std::ptrdiff_t(e.offset + e.size)),
                   e.shape);
    }
    {
      const h5::handle state = h5::create_group(file.get(), session_file_names::state);
      with_optimizer([&](const auto& o) {
        h5::write_attribute(state.get(), "steps", o.host_step_count());
        const std::vector<std::size_t> shape{t.flat_size()};
        write_flat(state.get(), session_file_names::state, "moment1", host_copy(o.moment1()), shape);
        if (o.moment2().extent(0) > 0)
          write_flat(state.get(), session_file_names::state, "moment2", host_copy(o.moment2()), shape);
        if (o.compensation().extent(0) > 0)
          write_flat(state.get(), session_file_names::state, "compensation", host_copy(o.compensation()), shape);
      });
      // Saved between the micro-batches of one optimizer step: their gradients so far.
      if (micro_ != 0)
        write_flat(state.get(), session_file_names::state, "accumulated_gradients", host_copy(grads_),
                   std::vector<std::size_t>{t.flat_size()});
    }
    file.close("closing '" + tmp + "'");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw checkpoint_error("cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(errno));
}

template <class T, class ExecutionSpace>
void mlp_engine<T, ExecutionSpace>::load(const std::string& path) {
  const std::string where = "'" + path + "'";
  // A directory, FIFO or device is refused by name before HDF5 opens (and blocks on) it.
  if (const std::string problem = input_file_problem(path, "a session checkpoint"); !problem.empty())
    throw checkpoint_error(where + " " + problem);
  const h5::handle file = h5::open_file(path);
  if (!h5::has_attribute(file.get(), "format") ||
      h5::read_string_attribute(file.get(), "format", where) != session_format)
    throw checkpoint_error(where + " is not a kamp session file (no format attribute '" + session_format + "')");
  const std::int64_t version = h5::read_int_attribute(file.get(), "version", where);
  if (version != session_format_version)
    throw checkpoint_error(where + " has session format version " + std::to_string(version) + "; this kamp reads " +
                           std::to_string(session_format_version));
  // The same network, precision and optimizer: the file's state means nothing to another.
  const session_config saved =
      session_config::parse(h5::read_string_attribute(file.get(), "config", where), path + " (its stored config)");
  const auto mismatch = [&](const std::string& what) {
    throw checkpoint_error(where + " was saved for " + what + ": load it into a session made from the same config");
  };
  if (saved.model.layer_sizes != config_.model.layer_sizes) mismatch("other layer sizes");
  if (saved.model.hidden_activation != config_.model.hidden_activation ||
      saved.model.layernorm != config_.model.layernorm || saved.model.residual != config_.model.residual)
    mismatch("another activation, LayerNorm or residual setting");
  if (saved.mode != config_.mode) mismatch(std::string("precision ") + name(saved.mode));
  if (saved.optimizer != config_.optimizer) mismatch("another optimizer");

  // Everything is read and checked before anything is changed.
  const tensor_table& t = table();
  std::vector<float> exact(t.flat_size(), 0.0f);
  {
    const h5::handle weights = h5::open_group(file.get(), session_file_names::weights, path);
    for (const auto& e : t.entries()) {
      const auto v = read_flat<float>(weights.get(), session_file_names::weights, e.name, e.shape, path);
      std::copy(v.begin(), v.end(), exact.begin() + std::ptrdiff_t(e.offset));
    }
  }
  const h5::handle state = h5::open_group(file.get(), session_file_names::state, path);
  const std::vector<std::size_t> shape{t.flat_size()};
  std::vector<float> moment1, moment2;
  std::vector<T> compensation;
  std::int64_t optimizer_steps = 0;
  with_optimizer([&](const auto& o) {
    optimizer_steps = h5::read_int_attribute(state.get(), "steps", where + " optimizer");
    moment1 = read_flat<float>(state.get(), session_file_names::state, "moment1", shape, path);
    if (o.moment2().extent(0) > 0)
      moment2 = read_flat<float>(state.get(), session_file_names::state, "moment2", shape, path);
    if (o.compensation().extent(0) > 0)
      compensation = read_flat<T>(state.get(), session_file_names::state, "compensation", shape, path);
  });
  const std::int64_t micro = h5::read_int_attribute(file.get(), "micro_step", where);
  std::vector<float> accumulated;
  if (micro > 0 && micro < config_.grad_accumulation_steps)
    accumulated = read_flat<float>(state.get(), session_file_names::state, "accumulated_gradients", shape, path);
  loss_scale_state s{};
  s.scale = float(h5::read_float_attribute(file.get(), "scale", where));
  s.growth_tracker = std::int32_t(h5::read_int_attribute(file.get(), "growth_tracker", where));
  s.hysteresis_left = std::int32_t(h5::read_int_attribute(file.get(), "hysteresis_left", where));
  s.last_step_skipped = std::int32_t(h5::read_int_attribute(file.get(), "last_step_skipped", where));
  s.steps = h5::read_int_attribute(file.get(), "scaler_steps", where);
  s.skipped_steps = h5::read_int_attribute(file.get(), "skipped_steps", where);
  const std::int64_t train_steps = h5::read_int_attribute(file.get(), "train_steps", where);
  if (optimizer_steps < 0 || train_steps < 0 || micro < 0 || micro >= config_.grad_accumulation_steps)
    throw checkpoint_error(where + " has impossible step counters (optimizer " + std::to_string(optimizer_steps) +
                           ", train " + std::to_string(train_steps) + ", micro " + std::to_string(micro) + ")");
  for (const float w : exact)
    if (!std::isfinite(w)) throw checkpoint_error(where + " holds non-finite weights");
  loss_scaler<memory>(scaler_.options()).restore(s);  // throws on an impossible scaler state

  initialize(exact);
  with_optimizer([&](const auto& o) {
    const auto to_device = [](const auto& host, const auto& view) {
      using E = typename std::decay_t<decltype(host)>::value_type;
      Kokkos::deep_copy(view,
                        Kokkos::View<const E*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(host.data(), host.size()));
    };
    to_device(moment1, o.moment1());
    if (!moment2.empty()) to_device(moment2, o.moment2());
    if (!compensation.empty()) to_device(compensation, o.compensation());
    Kokkos::deep_copy(o.step_count(), optimizer_steps);
  });
  if (!accumulated.empty())
    Kokkos::deep_copy(grads_, Kokkos::View<const float*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                                  accumulated.data(), accumulated.size()));
  scaler_.restore(s);
  train_steps_ = train_steps;
  micro_ = int(micro);
}

}  // namespace

template <class ExecutionSpace>
std::unique_ptr<session_engine<ExecutionSpace>> make_session_engine(const session_config& config,
                                                                    const ExecutionSpace& space,
                                                                    const dist::communicator& ranks) {
  switch (config.mode) {
    case precision_mode::fp32:
      return std::make_unique<mlp_engine<float, ExecutionSpace>>(config, space, ranks);
    case precision_mode::amp_bf16:
    case precision_mode::pure_bf16:
      return std::make_unique<mlp_engine<bf16, ExecutionSpace>>(config, space, ranks);
    case precision_mode::amp_fp16:
      return std::make_unique<mlp_engine<fp16, ExecutionSpace>>(config, space, ranks);
    case precision_mode::amp_fp8:
      break;
  }
  throw std::invalid_argument(std::string("kamp::session: precision ") + name(config.mode) +
                              " is not available for a session; use fp32, amp_bf16, amp_fp16 or pure_bf16");
}

#define KAMP_SESSION_INSTANTIATE_(Space)                               \
  template std::unique_ptr<session_engine<Space>> make_session_engine( \
      const session_config& config, const Space& space, const dist::communicator& ranks);
KAMP_FOR_EACH_EXECUTION_SPACE(KAMP_SESSION_INSTANTIATE_)
#undef KAMP_SESSION_INSTANTIATE_

}  // namespace detail

std::optional<std::string> session_file_config(const std::string& path) {
  if (!input_file_problem(path, "a checkpoint").empty()) return std::nullopt;  // the caller's reader names it
  const detail::h5::handle file = detail::h5::open_file(path);
  const std::string where = "'" + path + "'";
  if (!detail::h5::has_attribute(file.get(), "format") ||
      detail::h5::read_string_attribute(file.get(), "format", where) != detail::session_format)
    return std::nullopt;
  return detail::h5::read_string_attribute(file.get(), "config", where);
}

}  // namespace kamp
