#ifndef KAMP_MODEL_STATE_STATE_WEIGHTS_HPP
#define KAMP_MODEL_STATE_STATE_WEIGHTS_HPP

#include <kamp/kernels/execution_spaces.hpp>
#include <kamp/model/network/weight_binding.hpp>
#include <kamp/model/state/training_state.hpp>

#include <Kokkos_Core.hpp>

namespace kamp {

/// \brief A training state's weights copied to the device, as a model binds them: the fp32
/// master weights (AMP) or the weights themselves as the exact ones, the model copy as the copy.
/// Generation from a checkpoint reads these; nothing of the optimizer is copied.
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
class state_weights {
 public:
  /// Throws std::invalid_argument when `state` lacks a tensor its precision mode keeps.
  explicit state_weights(const training_state& state);
  weight_binding binding() const;

 private:
  Kokkos::View<unsigned char*, typename ExecutionSpace::memory_space> exact_, copy_;
  dtype exact_type_, copy_type_;
  tensor_table table_;
};

#define KAMP_STATE_WEIGHTS_DECLARE_(Space) extern template class state_weights<Space>;
KAMP_FOR_EACH_EXECUTION_SPACE(KAMP_STATE_WEIGHTS_DECLARE_)

}  // namespace kamp

#endif
