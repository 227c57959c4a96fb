// The precision rules: the llama-recipes guard, quantization, fp16 without loss scaling, FP8's
// conditions, and bf16 or FP8 on hardware without it; each rule triggered and each message checked.
#include <kamp/kernels/gemm.hpp>
#include <kamp/model/diagnostics/gemm_paths.hpp>
#include <kamp/model/diagnostics/precision_rules.hpp>

#include "../support/catch.hpp"

#include "../support/fixtures.hpp"

#include <algorithm>

namespace {

using kamp::test::policy;
using level = kamp::precision_finding::level;

const kamp::hardware_report native = kamp::cpu_bf16_support("fpu sse2 avx2 avx512f avx512_bf16");

const kamp::precision_finding* find(const std::vector<kamp::precision_finding>& f, const std::string& rule) {
  const auto it = std::find_if(f.begin(), f.end(), [&](const auto& x) { return x.rule == rule; });
  return it == f.end() ? nullptr : &*it;
}

}  // namespace

TEST_CASE("bf16 parameters only for pure_bf16 without quantization (the llama-recipes guard)", "[model][rules]") {
  kamp::run_request request;
  request.quantization = "int8";
  const auto refused = kamp::check_precision(policy(kamp::precision_mode::pure_bf16), request, native);
  const auto* f = find(refused, "pure-bf16-with-quantization");
  REQUIRE(f != nullptr);
  CHECK(f->severity == level::error);
  CHECK_THAT(f->message, kamp::test::contains("llama-recipes") && kamp::test::contains("quantization is off"));
  CHECK(find(refused, "bf16-parameters") == nullptr);

  request.quantization = "none";
  const auto accepted = kamp::check_precision(policy(kamp::precision_mode::pure_bf16), request, native);
  REQUIRE(find(accepted, "bf16-parameters") != nullptr);
  CHECK(find(accepted, "bf16-parameters")->severity == level::note);
  CHECK(std::none_of(accepted.begin(), accepted.end(), [](const auto& x) { return x.severity == level::error; }));

  request.enable_fsdp = true;
  const auto sharded = kamp::check_precision(policy(kamp::precision_mode::pure_bf16), request, native);
  CHECK_THAT(find(sharded, "bf16-parameters")->message, kamp::test::contains("each rank keeps its shard in bf16"));
  REQUIRE(find(sharded, "sharding-single-process") != nullptr);
  CHECK(std::none_of(sharded.begin(), sharded.end(), [](const auto& x) { return x.severity == level::error; }));

  // AMP keeps fp32 master weights: no bf16-parameter note.
  CHECK(find(kamp::check_precision(policy(kamp::precision_mode::amp_bf16), {}, native), "bf16-parameters") == nullptr);
}

TEST_CASE("FP8 is refused with quantization or without master weights, and said to be emulated on CPUs",
          "[model][rules]") {
  kamp::run_request request;
  request.quantization = "int8";
  const auto quantized = kamp::check_precision(policy(kamp::precision_mode::amp_fp8), request, native);
  REQUIRE(find(quantized, "fp8-with-quantization") != nullptr);
  CHECK(find(quantized, "fp8-with-quantization")->severity == level::error);
  CHECK_THAT(find(quantized, "fp8-with-quantization")->message, kamp::test::contains("fp32 master"));

  request = {};
  request.fp8_settings = true;
  const auto masterless = kamp::check_precision(policy(kamp::precision_mode::pure_bf16), request, native);
  REQUIRE(find(masterless, "fp8-needs-master-weights") != nullptr);
  CHECK(find(masterless, "fp8-needs-master-weights")->severity == level::error);
  CHECK_THAT(find(masterless, "fp8-needs-master-weights")->message, kamp::test::contains("--mode amp_fp8"));
  const auto unused = kamp::check_precision(policy(kamp::precision_mode::amp_bf16), request, native);
  REQUIRE(find(unused, "fp8-settings-unused") != nullptr);
  CHECK(find(unused, "fp8-settings-unused")->severity == level::note);
  CHECK(find(kamp::check_precision(policy(kamp::precision_mode::amp_fp8), request, native), "fp8-settings-unused") ==
        nullptr);

  // A CPU has no FP8 dot products; a device that has them gets no note.
  const auto cpu = kamp::check_precision(policy(kamp::precision_mode::amp_fp8), {}, native);
  REQUIRE(find(cpu, "fp8-emulated") != nullptr);
  CHECK_THAT(find(cpu, "fp8-emulated")->message, kamp::test::contains("widen their FP8 operands to bf16"));
  kamp::hardware_report hopper = native;
  hopper.native_fp8 = true;
  CHECK(find(kamp::check_precision(policy(kamp::precision_mode::amp_fp8), {}, hopper), "fp8-emulated") == nullptr);
  CHECK(std::none_of(cpu.begin(), cpu.end(), [](const auto& x) { return x.severity == level::error; }));
}

TEST_CASE("quantization alone is refused as unsupported", "[model][rules]") {
  kamp::run_request request;
  request.quantization = "4bit";
  for (const auto m : {kamp::precision_mode::fp32, kamp::precision_mode::amp_bf16, kamp::precision_mode::amp_fp16}) {
    const auto f = kamp::check_precision(policy(m), request, native);
    REQUIRE(find(f, "quantization-unsupported") != nullptr);
    CHECK(find(f, "quantization-unsupported")->severity == level::error);
    CHECK_THAT(find(f, "quantization-unsupported")->message, kamp::test::contains("--quantization 4bit"));
  }
}

TEST_CASE("amp_fp16 without a loss scaler is refused unless forced", "[model][rules]") {
  kamp::run_request request;
  request.loss_scaling = kamp::loss_scaling::off;
  const auto refused = kamp::check_precision(policy(kamp::precision_mode::amp_fp16), request, native);
  REQUIRE(find(refused, "fp16-needs-loss-scaling") != nullptr);
  CHECK(find(refused, "fp16-needs-loss-scaling")->severity == level::error);
  CHECK_THAT(find(refused, "fp16-needs-loss-scaling")->message, kamp::test::contains("--force-unscaled-fp16"));
  request.force_unscaled_fp16 = true;
  const auto forced = kamp::check_precision(policy(kamp::precision_mode::amp_fp16), request, native);
  CHECK(find(forced, "fp16-needs-loss-scaling")->severity == level::warning);
  request.loss_scaling = kamp::loss_scaling::fixed;
  CHECK(find(kamp::check_precision(policy(kamp::precision_mode::amp_fp16), request, native),
             "fp16-needs-loss-scaling") == nullptr);
  // Other modes need no scaler; asking for one is explained, not refused.
  CHECK(find(kamp::check_precision(policy(kamp::precision_mode::amp_bf16), request, native), "loss-scaling-fp16-only")
            ->severity == level::note);

  kamp::train_options o;
  kamp::apply_loss_scaling(request, o);
  CHECK_FALSE(o.scaler.dynamic);
  CHECK(o.scaler.init_scale == 65536.0f);
  request.loss_scaling = kamp::loss_scaling::off;
  kamp::apply_loss_scaling(request, o);
  CHECK(o.scaler.init_scale == 1.0f);
}

TEST_CASE("loss scalings are spelled by name() and parsed back; an unknown spelling lists the choices",
          "[model][rules]") {
  for (const auto s : kamp::loss_scaling_modes()) CHECK(kamp::parse_loss_scaling(kamp::name(s)) == s);
  CHECK(std::string(kamp::name(kamp::loss_scaling::fixed)) == "static");
  CHECK(kamp::run_request{}.loss_scaling == kamp::loss_scaling::dynamic);
  CHECK_THROWS_WITH(kamp::parse_loss_scaling("fixed"),
                    kamp::test::contains("unknown loss scaling 'fixed': expected dynamic, static or off"));
}

TEST_CASE("bf16 without native hardware support is a note naming what was detected and what it costs",
          "[model][rules]") {
  const auto x86_old = kamp::cpu_bf16_support("fpu sse2 avx2 fma avx512f");
  CHECK_FALSE(x86_old.native_bf16);
  CHECK(kamp::cpu_bf16_support("fp asimd bf16 i8mm").native_bf16);
  CHECK(kamp::cpu_bf16_support("fpu amx_bf16 amx_tile").native_bf16);
  CHECK(native.native_bf16);
  CHECK(native.evidence == "CPU flag avx512_bf16");
  for (const auto m : {kamp::precision_mode::amp_bf16, kamp::precision_mode::pure_bf16}) {
    const auto f = kamp::check_precision(policy(m), {}, x86_old);
    REQUIRE(find(f, "bf16-emulated") != nullptr);
    CHECK(find(f, "bf16-emulated")->severity == level::note);
    CHECK_THAT(find(f, "bf16-emulated")->message, kamp::test::contains("avx512_bf16") &&
                                                      kamp::test::contains("widen to fp32") &&
                                                      kamp::test::contains("half the memory"));
    CHECK(find(kamp::check_precision(policy(m), {}, native), "bf16-emulated") == nullptr);
  }
  CHECK(find(kamp::check_precision(policy(kamp::precision_mode::fp32), {}, x86_old), "bf16-emulated") == nullptr);
  CHECK_FALSE(kamp::detect_hardware().device.empty());
  CHECK(kamp::detect_hardware().bf16_gemm ==
        kamp::gemm_path_on_this_machine<Kokkos::DefaultExecutionSpace, kamp::bf16, kamp::bf16, float>().path);
}

TEST_CASE("gemm_paths names one path per type combination the policy multiplies with", "[model][rules]") {
  const auto lines = kamp::gemm_paths(policy(kamp::precision_mode::amp_bf16));
  REQUIRE(lines.size() == 2);
  CHECK_THAT(lines[0], Catch::Matchers::StartsWith("bf16 x bf16 -> bf16: "));
  CHECK_THAT(lines[1], Catch::Matchers::StartsWith("bf16 x bf16 -> fp32: "));
  const auto fp32 = kamp::gemm_paths(policy(kamp::precision_mode::fp32));
  REQUIRE(fp32.size() == 1);
  CHECK_THAT(fp32[0], Catch::Matchers::StartsWith("fp32 x fp32 -> fp32: "));
}
