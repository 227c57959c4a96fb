#ifndef KAMP_KERNELS_HPP
#define KAMP_KERNELS_HPP

#include <kamp/kernels/adamw.hpp>
#include <kamp/kernels/cast.hpp>
#include <kamp/kernels/flat_tensors.hpp>
#include <kamp/kernels/fp8_scaling.hpp>
#include <kamp/kernels/fused_optimizer.hpp>
#include <kamp/kernels/gemm.hpp>
#include <kamp/kernels/gemm_epilogue.hpp>
#include <kamp/kernels/gemm_fp8.hpp>
#include <kamp/kernels/gradient_check.hpp>
#include <kamp/kernels/loss_scaler.hpp>
#include <kamp/kernels/nn.hpp>
#include <kamp/kernels/rounding_options.hpp>
#include <kamp/kernels/sgd.hpp>
#include <kamp/kernels/unscale_and_check.hpp>
#include <kamp/kernels/value_range.hpp>

#endif
