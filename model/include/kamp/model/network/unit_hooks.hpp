#ifndef KAMP_MODEL_NETWORK_UNIT_HOOKS_HPP
#define KAMP_MODEL_NETWORK_UNIT_HOOKS_HPP

namespace kamp {

/// \brief What a model whose parameters or gradients are sharded over ranks calls around each
/// unit of parameters (FSDP's pre-forward, pre-backward and post-backward hooks). Unit 0 is the
/// root (wte, wpe, lnf: read at both ends of a pass), unit 1 + l is block l (gpt_parameters::units).
/// An implementation makes a unit's weights readable (gpt::bind_tensor) before it is used, and
/// takes its gradients away once its backward pass is done.
class unit_hooks {
 public:
  virtual ~unit_hooks() = default;
  /// Before the forward pass reads unit `unit`'s weights.
  virtual void before_forward(int unit) = 0;
  /// Before the backward pass reads its weights and writes its gradients (which start at zero).
  virtual void before_backward(int unit) = 0;
  /// Its gradients of this pass are complete.
  virtual void after_backward(int unit) = 0;
};

}  // namespace kamp

#endif
