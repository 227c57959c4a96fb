#ifndef KAMP_KERNELS_NN_HPP
#define KAMP_KERNELS_NN_HPP

// The transformer's own ops, each a forward/backward pair with statistics in fp32.
#include <kamp/kernels/nn/activation.hpp>
#include <kamp/kernels/nn/attention_decode.hpp>
#include <kamp/kernels/nn/attention_heads.hpp>
#include <kamp/kernels/nn/causal_softmax.hpp>
#include <kamp/kernels/nn/column_sums.hpp>
#include <kamp/kernels/nn/cross_entropy.hpp>
#include <kamp/kernels/nn/embedding.hpp>
#include <kamp/kernels/nn/gelu.hpp>
#include <kamp/kernels/nn/layernorm.hpp>
#include <kamp/kernels/nn/regression_loss.hpp>
#include <kamp/kernels/nn/residual.hpp>

#endif
