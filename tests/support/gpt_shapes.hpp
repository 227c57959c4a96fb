#ifndef KAMP_TESTS_SUPPORT_GPT_SHAPES_HPP
#define KAMP_TESTS_SUPPORT_GPT_SHAPES_HPP

#include <kamp/model/gpt_config.hpp>

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

}  // namespace kamp::test

#endif
