// What a training step asks of the device, counted through Kokkos Tools: kernel launches,
// fences and deep copies. The structure is the same on every backend, so a CPU build checks
// what a GPU needs: a steady-state step never waits for the host, and the launches per layer
// do not grow with the number of heads.
#include <kamp/kernels/gemm.hpp>
#include <kamp/kernels/nn/detail/nn_common.hpp>
#include <kamp/model/training/trainer.hpp>
#include <kamp/tools/launch_counter.hpp>

#include "../support/catch.hpp"

#include "../support/fixtures.hpp"
#include "../support/gpt_shapes.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace {

using tally = kamp::launch_tally;

// The runs of this file: micro-batches of 2 sequences, 10 steps, kamp's other defaults.
kamp::train_options launch_run() { return kamp::test::run_options(2, 10); }

/// One steady-state step (after two that create the vendors' plans and workspaces) of a small
/// model with `layers` and `heads`.
tally steady_step(kamp::precision_mode mode, int layers, int heads) {
  const kamp::gpt_config model = kamp::test::small_model(layers, heads);
  kamp::trainer t(model, kamp::test::policy(mode), launch_run(), kamp::test::corpus(model));
  t.advance();
  t.advance();
  t.reports();
  return kamp::count_launches([&] { t.advance(); });
}

std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += "\n  " + n;
  return out;
}

// kamp::gemm[path,TA,TB,TC] -> the path gemm_path_on_this_machine names for those types.
std::string promised_path(const std::string& region) {
  using space = kamp::gpt<float>::execution_space;
  const std::string types = region.substr(region.find(',') + 1);
  if (types == "fp32,fp32,fp32]") return kamp::gemm_path_on_this_machine<space, float, float, float>().path;
  if (types == "bf16,bf16,bf16]")
    return kamp::gemm_path_on_this_machine<space, kamp::bf16, kamp::bf16, kamp::bf16>().path;
  if (types == "bf16,bf16,fp32]") return kamp::gemm_path_on_this_machine<space, kamp::bf16, kamp::bf16, float>().path;
  if (types == "fp16,fp16,fp16]")
    return kamp::gemm_path_on_this_machine<space, kamp::fp16, kamp::fp16, kamp::fp16>().path;
  if (types == "fp16,fp16,fp32]") return kamp::gemm_path_on_this_machine<space, kamp::fp16, kamp::fp16, float>().path;
  // amp_fp8's Linears: on a host they widen to bf16 where kamp::gemm has a vendor path for it; on
  // a GPU the path also depends on the layout (cuBLASLt takes the TN forward), checked below.
  if (region.rfind("kamp::gemm_fp8[", 0) == 0) {
    if constexpr (std::is_same_v<space, Kokkos::DefaultHostExecutionSpace>)
      return kamp::gemm_path_on_this_machine<space, kamp::bf16, kamp::bf16, float>().path == "portable"
                 ? "portable"
                 : "bf16_widened";
    return "portable or cublaslt";
  }
  return "unexpected types " + types;
}

}  // namespace

TEST_CASE("a steady-state training step neither waits for nor copies from the host", "[model][launches]") {
  for (const auto mode : kamp::precision_modes()) {
    const tally step = steady_step(mode, 2, 2);
    INFO(name(mode) << ": fences" << listed(step.fence_names) << "\ncopies" << listed(step.copy_names));
    CHECK(step.fences == 0);
    CHECK(step.copies == 0);
    CHECK(step.launches > 0);
  }
}

TEST_CASE("reading the reports is where a run waits, once for many steps", "[model][launches]") {
  const kamp::gpt_config model = kamp::test::small_model();
  kamp::trainer t(model, kamp::test::policy(kamp::precision_mode::amp_bf16), launch_run(), kamp::test::corpus(model));
  t.advance();
  t.reports();
  std::vector<kamp::step_report> read;
  const tally reading = kamp::count_launches([&] {
    for (int i = 0; i < 3; ++i) t.advance();
    read = t.reports();
  });
  // The counters see a host read: this is what the steady-state test would catch.
  CHECK(reading.copies == 1);
  REQUIRE(read.size() == 3);
  for (int i = 0; i < 3; ++i) CHECK(read[i].step == i + 2);
}

TEST_CASE("launches per layer do not depend on the number of heads", "[model][launches]") {
  for (const auto mode : {kamp::precision_mode::fp32, kamp::precision_mode::amp_bf16}) {
    const int one_layer = steady_step(mode, 1, 2).launches, two_heads = steady_step(mode, 2, 2).launches;
    const int four_heads = steady_step(mode, 2, 4).launches, eight_heads = steady_step(mode, 2, 8).launches;
    INFO(name(mode) << ": 1 layer " << one_layer << ", 2 layers with 2/4/8 heads " << two_heads << "/" << four_heads
                    << "/" << eight_heads);
    CHECK(two_heads > one_layer);
    CHECK(four_heads == two_heads);
    CHECK(eight_heads == two_heads);
  }
}

TEST_CASE("a layer launches 12 kernels outside its GEMMs, and no layout copies", "[model][launches]") {
  // Per layer, forward: LayerNorm 1 with the previous branch's skip connection, softmax; LayerNorm
  // 2 with the attention's (the GELU is the fc GEMM's epilogue, inside its region). Backward: the narrowing of the
  // stream gradient with the projection's bias gradient, the GELU backward with the fc bias
  // gradient, LayerNorm 2 (rows and parameters); the same narrowing, softmax backward, the qkv
  // bias gradient, LayerNorm 1. Unfused (kamp 0.2) it was 22 with the GELU: split/merge heads
  // twice, separate residual adds, casts and column sums. Launches inside GEMM regions (bias prologues, widening,
  // the GELU epilogue's pass after a vendor GEMM) depend on the path and are counted apart. A GPU
  // walks a column per thread, too few threads for element-wise work, so there the narrowing and
  // the GELU backward run apart from their column sums (the same bits): 2 more in a 16-bit
  // mode's narrowings, 1 more for the GELU.
  using space = kamp::gpt<float>::execution_space;
  constexpr bool apart = kamp::detail::column_block<space>::value == 1;
  for (const auto mode : {kamp::precision_mode::fp32, kamp::precision_mode::amp_bf16}) {
    const tally one = steady_step(mode, 1, 2), two = steady_step(mode, 2, 2);
    const int per_layer = (two.launches - two.gemm_launches) - (one.launches - one.gemm_launches);
    const int expected = 12 + (apart ? 1 + (mode == kamp::precision_mode::fp32 ? 0 : 2) : 0);
    INFO(name(mode) << ": " << one.launches << " launches with 1 layer (" << one.gemm_launches << " in GEMMs), "
                    << two.launches << " with 2 (" << two.gemm_launches << " in GEMMs):" << listed(two.kernels));
    CHECK(per_layer == expected);
    for (const auto& kernels : {one.kernels, two.kernels})
      for (const auto& k : kernels) {
        CHECK(k != "kamp::split_heads");
        CHECK(k != "kamp::merge_heads");
        CHECK(k != "kamp::residual_with_bias");
      }
  }
}

TEST_CASE("a step's launches outside its GEMMs are a count per mode plus a count per layer", "[model][launches]") {
  // The whole step, not only the layer: the data and the token index (fill, sample, count, scan,
  // place), the embedding, the final LayerNorm and the head's cross-entropy, their backward
  // passes, the gradient check and the update; FP8 adds its scaling kernels. Launches inside GEMM
  // regions depend on the path and are counted apart. A GPU runs the narrowing and the GELU
  // backward apart from their column sums (the layer test above).
  using space = kamp::gpt<float>::execution_space;
  constexpr bool apart = kamp::detail::column_block<space>::value == 1;
  struct expected {
    kamp::precision_mode mode;
    int fixed, per_layer;
  };
  // pure_bf16's and amp_fp8's layers add casts (amp_fp8: quantizing its Linears' operands); a
  // failure lists the kernels of the step.
  for (const expected e :
       {expected{kamp::precision_mode::fp32, 17, 12}, expected{kamp::precision_mode::amp_bf16, 17, 12},
        expected{kamp::precision_mode::amp_fp16, 17, 12}, expected{kamp::precision_mode::pure_bf16, 17, 16},
        expected{kamp::precision_mode::amp_fp8, 19, 25}}) {
    const int per_layer = e.per_layer + (apart ? 1 + (e.mode == kamp::precision_mode::fp32 ? 0 : 2) : 0);
    for (const int layers : {1, 2, 3}) {
      const tally step = steady_step(e.mode, layers, 2);
      INFO(name(e.mode) << ", " << layers << " layers:" << listed(step.kernels));
      // Zero fills aside: Kokkos 3.4 launches a kernel for them, Kokkos 5 may set the bytes instead.
      const auto kernels = std::count_if(step.kernels.begin(), step.kernels.end(),
                                         [](const std::string& k) { return k.rfind("Kokkos::ViewFill", 0) != 0; });
      CHECK(kernels == e.fixed + per_layer * layers);
    }
  }
}

TEST_CASE("every GEMM of a step takes the path its types have on this machine", "[model][launches]") {
  for (const auto mode : kamp::precision_modes()) {
    const int layers = 2;
    const tally step = steady_step(mode, layers, 2);
    // Per layer: 4 Linear forwards, 2 attention matmuls, and their backward (2 per Linear,
    // 4 for attention); the head: its forward and 2 backward.
    CHECK(step.gemms.size() == std::size_t(layers * (4 + 2 + 8 + 4) + 3));
    for (const auto& region : step.gemms) {
      const std::size_t open = region.find('[') + 1;
      const std::string path = region.substr(open, region.find(',') - open), promised = promised_path(region);
      INFO(name(mode) << ": " << region);
      if (promised == "portable or cublaslt")
        CHECK((path == "portable" || path == "cublaslt"));
      else
        CHECK(path == promised);
    }
  }
}
