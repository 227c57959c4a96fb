#ifndef KAMP_MODEL_TRAINING_SESSION_HPP
#define KAMP_MODEL_TRAINING_SESSION_HPP

#include <kamp/kernels/flat_tensors.hpp>
#include <kamp/model/config/session_config.hpp>
#include <kamp/model/dist/communicator.hpp>
#include <kamp/model/training/tensor_ref.hpp>
#include <kamp/numeric/element_access.hpp>
#include <kamp/numeric/format.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kamp {

/// Why the last optimizer step was skipped (none: it was taken).
enum class skip_cause { none, non_finite_inputs, non_finite_labels, non_finite_gradients };
const char* name(skip_cause c);

/// \brief A session's counters and its last step, read from the device (the call waits).
struct session_report {
  std::int64_t train_steps = 0;      ///< train_step calls
  std::int64_t optimizer_steps = 0;  ///< optimizer steps taken (skipped ones excluded)
  std::int64_t skipped_steps = 0;    ///< optimizer steps skipped for inf/NaN
  skip_cause last_cause = skip_cause::none;
  double loss = 0;       ///< the last micro-batch's mean loss
  float loss_scale = 1;  ///< amp_fp16's dynamic scale (1 in the other modes)
  float grad_norm = 0;   ///< the gradients' global L2 norm at the last optimizer step
};

namespace detail {

/// The precision-specific half of a session (compute type, optimizer, loss scaler), behind one
/// interface so that the public class is one type whatever the config's precision. Its inputs
/// arrive converted to fp32 in `staged_inputs` / `staged_labels` (what the templates below do
/// on the device, from any layout and type).
template <class ExecutionSpace>
class session_engine {
 public:
  using memory_space = typename ExecutionSpace::memory_space;
  using staging = Kokkos::View<float**, Kokkos::LayoutRight, memory_space>;
  using flag = Kokkos::View<int, memory_space>;
  virtual ~session_engine() = default;
  virtual staging staged_inputs(int n) = 0;
  virtual staging staged_labels(int n) = 0;
  virtual flag inputs_non_finite() const = 0;
  virtual flag labels_non_finite() const = 0;
  /// One step on the staged batch of n rows: forward, loss, backward, and the optimizer step
  /// every grad_accumulation_steps calls. Launches only.
  virtual void train_staged(int n) = 0;
  /// The network's (n, outputs) fp32 output for the staged inputs.
  virtual staging predict_staged(int n) = 0;
  virtual Kokkos::View<const double, memory_space> loss() const = 0;
  virtual session_report report() const = 0;
  virtual const tensor_table& table() const = 0;
  virtual std::vector<float> weights() const = 0;
  virtual void save(const std::string& path) const = 0;
  virtual void load(const std::string& path) = 0;
};

template <class ExecutionSpace>
std::unique_ptr<session_engine<ExecutionSpace>> make_session_engine(const session_config& config,
                                                                    const ExecutionSpace& space,
                                                                    const dist::communicator& ranks);

template <class T>
inline constexpr bool session_value_type =
    std::is_same_v<T, double> || std::is_same_v<T, float> || std::is_same_v<T, bf16> || std::is_same_v<T, fp16>;

/// Rows of any (N, C) view into the fp32 staging buffer, counting non-finite values (after the
/// conversion: an fp64 value beyond fp32's range counts) into `non_finite`. Nothing waits.
template <class ExecutionSpace, class Source>
void stage_rows(const ExecutionSpace& space, const Source& source,
                const typename session_engine<ExecutionSpace>::staging& staged,
                const typename session_engine<ExecutionSpace>::flag& non_finite) {
  const int cols = int(staged.extent(1));
  Kokkos::parallel_reduce(
      "kamp::session::stage", Kokkos::RangePolicy<ExecutionSpace>(space, 0, int(staged.extent(0))),
      KOKKOS_LAMBDA(int r, int& bad) {
        for (int j = 0; j < cols; ++j) {
          const float v = load_as<float>(&source(r, j));
          staged(r, j) = v;
          bad += v - v == 0.0f ? 0 : 1;
        }
      },
      non_finite);
}

/// The fp32 output rows into any (N, C) view, rounded once to its type.
template <class ExecutionSpace, class Target>
void unstage_rows(const ExecutionSpace& space, const typename session_engine<ExecutionSpace>::staging& staged,
                  const Target& target) {
  const int cols = int(staged.extent(1));
  using U = typename Target::non_const_value_type;
  Kokkos::parallel_for(
      "kamp::session::unstage", Kokkos::RangePolicy<ExecutionSpace>(space, 0, int(staged.extent(0))),
      KOKKOS_LAMBDA(int r) {
        for (int j = 0; j < cols; ++j) {
          // Both read outside `if constexpr`, where nvcc's device lambdas cannot first capture.
          U* const out = &target(r, j);
          const float value = staged(r, j);
          if constexpr (std::is_same_v<U, double>)
            *out = double(value);
          else
            store_nearest(out, value);
        }
      });
}

/// A caller's tensor (any layout, type and, on a GPU build, host or device memory) into the
/// staging buffer, counting non-finite values as stage_rows does; host memory that the device
/// cannot read goes through one host staging buffer and one copy. Nothing waits on the device.
template <class ExecutionSpace>
void stage_tensor(const ExecutionSpace& space, const tensor_matrix& source,
                  const typename session_engine<ExecutionSpace>::staging& staged,
                  const typename session_engine<ExecutionSpace>::flag& non_finite);
/// The fp32 output rows into a caller's tensor, rounded once to its type. Waits for the device
/// only where the target is host memory the device cannot write.
template <class ExecutionSpace>
void unstage_tensor(const ExecutionSpace& space, const typename session_engine<ExecutionSpace>::staging& staged,
                    const tensor_matrix& target);

/// A tensor's matrix, checked against the network's width, the batch limits and where the
/// session runs (device memory needs a session on a GPU backend).
tensor_matrix session_matrix(const char* api, const char* what, const tensor_ref& t, int columns, bool written,
                             const char* session_space, bool device_session);

template <class ExecutionSpace>
tensor_matrix session_matrix(const char* api, const char* what, const tensor_ref& t, int columns, bool written) {
  return session_matrix(
      api, what, t, columns, written, ExecutionSpace::name(),
      !Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename ExecutionSpace::memory_space>::accessible);
}

template <class ExecutionSpace, class View>
void check_session_view(const char* api, const char* what, const View& v, std::size_t columns) {
  static_assert(View::rank == 2, "kamp::session: inputs, labels and outputs are (batch, features) views");
  static_assert(session_value_type<typename View::non_const_value_type>,
                "kamp::session: views hold fp64, fp32, bf16 or fp16 values");
  static_assert(Kokkos::SpaceAccessibility<ExecutionSpace, typename View::memory_space>::accessible,
                "kamp::session: the view's memory space is not accessible from the session's execution space");
  if (v.extent(1) != columns)
    throw std::invalid_argument(std::string(api) + ": " + what + " '" + v.label() + "' has " +
                                std::to_string(v.extent(1)) + " columns, the network's config has " +
                                std::to_string(columns));
  if (v.extent(0) == 0 || v.extent(0) > std::size_t(1) << 30)
    throw std::invalid_argument(std::string(api) + ": " + what + " '" + v.label() + "' has " +
                                std::to_string(v.extent(0)) + " rows; a batch has 1 to 2^30");
  if (v.data() == nullptr) throw std::invalid_argument(std::string(api) + ": " + what + " is an empty view");
}

}  // namespace detail

/// \brief Training a network from a config inside a science code: one call per step, Kokkos
/// views of any layout and floating type in, nothing waiting for the host within a step.
///
/// Every kernel runs on the execution space instance given at construction (a CUDA or HIP stream
/// travels with it). Inputs and labels are (batch, features) views in memory that instance can
/// reach; they are read where they lie and converted on the device. The loss stays in a device
/// scalar (loss()) until the caller reads it; report() reads the counters (and waits).
/// Several sessions may live in one process; each owns its buffers.
///
/// With a communicator of several ranks the session trains data parallel: every rank calls
/// train_step with its own batch (each rank's batch weighs equally in the mean), the gradients
/// are summed over the ranks before each optimizer step (the one place a step waits: MPI reads
/// them), and every rank keeps the same weights. save() writes from rank 0; load() reads on all.
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
class session {
 public:
  using execution_space = ExecutionSpace;
  using memory_space = typename ExecutionSpace::memory_space;

  explicit session(const session_config& config, const ExecutionSpace& space = ExecutionSpace(),
                   const dist::communicator& ranks = dist::communicator())
      : space_(space), config_(config), engine_(detail::make_session_engine(config, space, ranks)) {}
  /// A session from a YAML or JSON config file (TorchFort's mlp files included).
  static session from_file(const std::string& path, const ExecutionSpace& space = ExecutionSpace(),
                           const dist::communicator& ranks = dist::communicator()) {
    return session(session_config::from_file(path), space, ranks);
  }

  /// One training step on (batch, inputs) inputs and (batch, outputs) labels.
  template <class InputView, class LabelView>
  void train_step(const InputView& inputs, const LabelView& labels) {
    constexpr const char* api = "kamp::session::train_step";
    detail::check_session_view<ExecutionSpace>(api, "inputs", inputs, std::size_t(config_.model.inputs()));
    detail::check_session_view<ExecutionSpace>(api, "labels", labels, std::size_t(config_.model.outputs()));
    if (labels.extent(0) != inputs.extent(0))
      throw std::invalid_argument(std::string(api) + ": inputs have " + std::to_string(inputs.extent(0)) +
                                  " rows but labels " + std::to_string(labels.extent(0)));
    const int n = int(inputs.extent(0));
    detail::stage_rows(space_, inputs, engine_->staged_inputs(n), engine_->inputs_non_finite());
    detail::stage_rows(space_, labels, engine_->staged_labels(n), engine_->labels_non_finite());
    engine_->train_staged(n);
  }

  /// The network's outputs for (batch, inputs) inputs, written into (batch, outputs) `outputs`.
  template <class InputView, class OutputView>
  void predict(const InputView& inputs, const OutputView& outputs) {
    constexpr const char* api = "kamp::session::predict";
    static_assert(!std::is_const_v<typename OutputView::value_type>, "kamp::session::predict: outputs are written");
    detail::check_session_view<ExecutionSpace>(api, "inputs", inputs, std::size_t(config_.model.inputs()));
    detail::check_session_view<ExecutionSpace>(api, "outputs", outputs, std::size_t(config_.model.outputs()));
    if (outputs.extent(0) != inputs.extent(0))
      throw std::invalid_argument(std::string(api) + ": inputs have " + std::to_string(inputs.extent(0)) +
                                  " rows but outputs " + std::to_string(outputs.extent(0)));
    const int n = int(inputs.extent(0));
    detail::stage_rows(space_, inputs, engine_->staged_inputs(n), engine_->inputs_non_finite());
    detail::unstage_rows(space_, engine_->predict_staged(n), outputs);
  }

  /// The same on arrays described by address, shape and strides (what kamp's C API and Fortran
  /// module pass): read where they lie, in host or device memory.
  void train_step(const tensor_ref& inputs, const tensor_ref& labels) {
    const auto [x, y] = matrices("kamp::session::train_step", inputs, labels, "labels", false);
    const int n = int(x.rows);
    detail::stage_tensor(space_, x, engine_->staged_inputs(n), engine_->inputs_non_finite());
    detail::stage_tensor(space_, y, engine_->staged_labels(n), engine_->labels_non_finite());
    engine_->train_staged(n);
  }
  void predict(const tensor_ref& inputs, const tensor_ref& outputs) {
    const auto [x, y] = matrices("kamp::session::predict", inputs, outputs, "outputs", true);
    const int n = int(x.rows);
    detail::stage_tensor(space_, x, engine_->staged_inputs(n), engine_->inputs_non_finite());
    detail::unstage_tensor(space_, engine_->predict_staged(n), y);
  }

  /// The last micro-batch's mean loss, on the device (read it when you want; nothing waits).
  Kokkos::View<const double, memory_space> loss() const { return engine_->loss(); }
  /// The counters and the last step's outcome (waits for the device).
  session_report report() const { return engine_->report(); }
  /// Writes weights, optimizer state and counters to an HDF5 file (via `path`.tmp, then
  /// renamed): h5py reads a weight as f["model/layers.0.weight"].
  void save(const std::string& path) const { engine_->save(path); }
  /// Reads a file save() wrote for the same network, precision and optimizer; on any problem it
  /// throws and the session is unchanged.
  void load(const std::string& path) { engine_->load(path); }

  const session_config& config() const { return config_; }
  const tensor_table& parameters() const { return engine_->table(); }
  /// The exact weights (fp32 master, fp32 weights, or pure_bf16's widened exactly) on the host,
  /// laid out by parameters(): for inspection and tests. Waits for the device.
  std::vector<float> weights() const { return engine_->weights(); }
  const ExecutionSpace& space() const { return space_; }

 private:
  // The inputs' and the other tensor's matrices, checked against the network and each other.
  std::pair<detail::tensor_matrix, detail::tensor_matrix> matrices(const char* api, const tensor_ref& inputs,
                                                                   const tensor_ref& other, const char* what,
                                                                   bool written) const {
    const detail::tensor_matrix x =
        detail::session_matrix<ExecutionSpace>(api, "inputs", inputs, config_.model.inputs(), false);
    const detail::tensor_matrix y =
        detail::session_matrix<ExecutionSpace>(api, what, other, config_.model.outputs(), written);
    if (x.rows != y.rows)
      throw std::invalid_argument(std::string(api) + ": inputs have " + std::to_string(x.rows) + " rows but " + what +
                                  " " + std::to_string(y.rows));
    return {x, y};
  }

  ExecutionSpace space_;
  session_config config_;
  std::unique_ptr<detail::session_engine<ExecutionSpace>> engine_;
};

/// The config stored in a session checkpoint, or nothing when `path` is an HDF5 file of another
/// kind (a GPT checkpoint); throws when it cannot be read. A session made from it loads the file.
std::optional<std::string> session_file_config(const std::string& path);

}  // namespace kamp

#endif
