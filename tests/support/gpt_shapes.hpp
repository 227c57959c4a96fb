#ifndef KAMP_TESTS_SUPPORT_GPT_SHAPES_HPP
#define KAMP_TESTS_SUPPORT_GPT_SHAPES_HPP

#include <kamp/model/config/gpt_config.hpp>

namespace kamp::test {

/// A GPT shape with the byte vocabulary, named field by field (the tests use small ones).
inline gpt_config gpt_shape(int context, int layers, int heads, int d_model, int mlp) {
  gpt_config c;
  c.context = context;
  c.layers = layers;
  c.heads = heads;
  c.d_model = d_model;
  c.mlp = mlp;
  return c;
}

/// Context 32, two blocks of width 64 with two heads, MLP 256 (≈ 0.12M parameters): the model
/// whose loss the training tests watch fall, large enough to learn the default corpus in a few
/// hundred steps on one core.
inline gpt_config tiny_model() { return gpt_shape(32, 2, 2, 64, 256); }

/// Context 16, width 32, MLP 64 (≈ 17k parameters with one block): the model of the tests that
/// check state, checkpoints, diagnoses and launches rather than learning; `layers` and `heads`
/// vary where a test needs them to.
inline gpt_config small_model(int layers = 1, int heads = 2) { return gpt_shape(16, layers, heads, 32, 64); }

}  // namespace kamp::test

#endif
