#include <kamp/model/network/gpt_parameters.hpp>
#include <kamp/model/state/state_weights.hpp>

#include <stdexcept>
#include <string>

namespace kamp {

template <class ES>
state_weights<ES>::state_weights(const training_state& state) : table_(parameter_table(state.model)) {
  const auto tensor = [&](const char* role) -> const state_tensor* {
    for (const auto& t : state.tensors)
      if (t.role == role) return &t;
    return nullptr;
  };
  const state_tensor* model = tensor("model");
  const state_tensor* master = tensor("master");
  if (model == nullptr) throw std::invalid_argument("the training state has no model weights (role 'model')");
  if (state.policy.has_master() && master == nullptr)
    throw std::invalid_argument(std::string("the training state lacks the fp32 master weights ") +
                                name(state.policy.mode) + " keeps (role 'master')");
  const state_tensor* exact = master != nullptr ? master : model;
  const auto to_device = [&](const state_tensor& t, const char* label) {
    Kokkos::View<unsigned char*, typename ES::memory_space> out(std::string(label), t.bytes.size());
    Kokkos::deep_copy(out, Kokkos::View<const unsigned char*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                               t.bytes.data(), t.bytes.size()));
    return out;
  };
  exact_ = to_device(*exact, "kamp::state_weights::exact");
  copy_ = exact == model ? exact_ : to_device(*model, "kamp::state_weights::copy");
  exact_type_ = exact->type;
  copy_type_ = model->type;
}

template <class ES>
weight_binding state_weights<ES>::binding() const {
  return {{exact_type_, exact_.data()}, table_, {copy_type_, copy_.data()}};
}

#define KAMP_STATE_WEIGHTS_INSTANTIATE_(Space) template class state_weights<Space>;
KAMP_FOR_EACH_EXECUTION_SPACE(KAMP_STATE_WEIGHTS_INSTANTIATE_)

}  // namespace kamp
