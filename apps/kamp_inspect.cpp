// kamp-inspect: what a kamp checkpoint holds, and per-tensor statistics, without training.
#include <kamp/model/network/gpt_parameters.hpp>
#include <kamp/model/state/checkpoint.hpp>
#include <kamp/model/state/file_rules.hpp>
#include <kamp/model/state/llmc_model.hpp>
#include <kamp/model/training/session.hpp>

#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>
#include "train/option_checks.hpp"
#include "train/output_checks.hpp"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <stdexcept>

namespace {

std::string shape_text(const std::vector<std::size_t>& shape) {
  std::string s;
  for (const auto d : shape) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

nlohmann::json describe(const std::string& path, const kamp::training_state& s) {
  const kamp::gpt_config& m = s.model;
  nlohmann::json tensors = nlohmann::json::array();
  std::size_t non_finite = 0;
  const kamp::tensor_table table = parameter_table(m);
  for (const auto& t : s.tensors)
    for (const auto& e : table.entries()) {
      const auto st = kamp::statistics(t, e.offset, e.size);
      non_finite += st.non_finite;
      tensors.push_back({{"name", t.role + "/" + e.name},
                         {"dtype", kamp::name(t.type)},
                         {"shape", e.shape},
                         {"min", st.min},
                         {"max", st.max},
                         {"mean", st.mean},
                         {"non_finite", st.non_finite}});
    }
  return {{"file", path},
          {"valid", true},
          {"bytes", std::filesystem::file_size(path)},
          {"format_version", s.format_version},
          {"kamp_version", s.kamp_version},
          {"model",
           {{"vocab", m.vocab},
            {"context", m.context},
            {"layers", m.layers},
            {"heads", m.heads},
            {"d_model", m.d_model},
            {"mlp", m.mlp},
            {"parameters", table.parameter_count()}}},
          {"precision_mode", kamp::name(s.policy.mode)},
          {"pure_bf16_update", kamp::name(s.policy.update)},
          {"fp32_layers", s.policy.fp32_layers},
          {"step", s.steps_taken},
          {"attempts", s.attempts},
          {"data_position", s.attempts * s.options.micro_batches},
          {"loss_scaler",
           {{"scale", s.scaler.scale},
            {"growth_tracker", s.scaler.growth_tracker},
            {"skipped_steps", s.scaler.skipped_steps}}},
          {"non_finite", non_finite},
          {"tensors", tensors}};
}

// A session checkpoint (kamp::session, kamp.h, `use kamp`): loaded into a host session made from
// its own config, which checks every hash, shape and counter as a resume would.
nlohmann::json describe_session(const std::string& path, const std::string& config_text) {
  struct kokkos_scope {
    kokkos_scope() { Kokkos::initialize(); }
    ~kokkos_scope() { Kokkos::finalize(); }
  } kokkos;
  nlohmann::json j;
  {
    const kamp::session_config config = kamp::session_config::parse(config_text, path + " (its stored config)");
    kamp::session<Kokkos::DefaultHostExecutionSpace> s(config);
    s.load(path);
    const kamp::session_report r = s.report();
    const std::vector<float> weights = s.weights();
    kamp::state_tensor exact{"model", kamp::dtype::fp32, std::vector<unsigned char>(weights.size() * sizeof(float))};
    std::memcpy(exact.bytes.data(), weights.data(), exact.bytes.size());
    nlohmann::json tensors = nlohmann::json::array();
    std::size_t non_finite = 0;
    for (const auto& e : s.parameters().entries()) {
      const kamp::tensor_statistics st = kamp::statistics(exact, e.offset, e.size);
      non_finite += st.non_finite;
      tensors.push_back({{"name", "model/" + e.name},
                         {"dtype", "fp32"},
                         {"shape", e.shape},
                         {"min", st.min},
                         {"max", st.max},
                         {"mean", st.mean},
                         {"non_finite", st.non_finite}});
    }
    j = {{"file", path},
         {"valid", true},
         {"kind", "session"},
         {"bytes", std::filesystem::file_size(path)},
         {"layer_sizes", config.model.layer_sizes},
         {"precision_mode", kamp::name(config.mode)},
         {"train_steps", r.train_steps},
         {"optimizer_steps", r.optimizer_steps},
         {"skipped_steps", r.skipped_steps},
         {"loss_scale", r.loss_scale},
         {"parameters", weights.size()},
         {"non_finite", non_finite},
         {"config", config_text},
         {"tensors", tensors}};
  }
  return j;
}

void print_tensors(const nlohmann::json& j) {
  std::printf("  %-34s %-5s %-10s %12s %12s %12s %10s\n", "tensor", "dtype", "shape", "min", "max", "mean",
              "non-finite");
  for (const auto& t : j["tensors"]) {
    const auto number = [](const nlohmann::json& v) { return v.is_number() ? v.get<double>() : std::nan(""); };
    std::printf("  %-34s %-5s %-10s %12.5g %12.5g %12.5g %10zu\n", t["name"].get<std::string>().c_str(),
                t["dtype"].get<std::string>().c_str(), shape_text(t["shape"].get<std::vector<std::size_t>>()).c_str(),
                number(t["min"]), number(t["max"]), number(t["mean"]), t["non_finite"].get<std::size_t>());
  }
  std::printf("  non-finite values in all tensors: %zu\n", j["non_finite"].get<std::size_t>());
}

void print_session(const nlohmann::json& j) {
  std::string sizes;
  for (const auto& n : j["layer_sizes"]) sizes += (sizes.empty() ? "" : ", ") + std::to_string(n.get<int>());
  std::printf("%s: kamp session checkpoint, %.2f MB\n", j["file"].get<std::string>().c_str(),
              j["bytes"].get<double>() / 1e6);
  std::printf("  model: MLP [%s]: %zu parameters\n", sizes.c_str(), j["parameters"].get<std::size_t>());
  std::printf("  precision: %s; %lld train steps, %lld optimizer steps (%lld skipped); loss scale %g\n",
              j["precision_mode"].get<std::string>().c_str(), j["train_steps"].get<long long>(),
              j["optimizer_steps"].get<long long>(), j["skipped_steps"].get<long long>(),
              j["loss_scale"].get<double>());
  print_tensors(j);
}

void print(const nlohmann::json& j) {
  const auto& m = j["model"];
  std::printf("%s: kamp checkpoint format %d, written by kamp %s, %.2f MB\n", j["file"].get<std::string>().c_str(),
              j["format_version"].get<int>(), j["kamp_version"].get<std::string>().c_str(),
              j["bytes"].get<double>() / 1e6);
  std::printf("  model: GPT %d layers, %d heads, d_model %d, mlp %d, context %d, vocab %d: %zu parameters\n",
              m["layers"].get<int>(), m["heads"].get<int>(), m["d_model"].get<int>(), m["mlp"].get<int>(),
              m["context"].get<int>(), m["vocab"].get<int>(), m["parameters"].get<std::size_t>());
  std::printf("  precision: %s; step %lld (%lld attempts), data position %lld; loss scale %g (%lld skipped)\n",
              j["precision_mode"].get<std::string>().c_str(), j["step"].get<long long>(),
              j["attempts"].get<long long>(), j["data_position"].get<long long>(),
              j["loss_scaler"]["scale"].get<double>(), j["loss_scaler"]["skipped_steps"].get<long long>());
  print_tensors(j);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "kamp-inspect: print a kamp checkpoint's metadata and per-tensor statistics (shape, dtype, min, "
      "max, mean, non-finite count). Reading it checks it completely: exit status 1 if it is damaged."};
  std::string path;
  std::string export_llmc, llmc_dtype = "fp32";
  bool json = false, run_config = false;
  kamp::checkpoint_read_options read_options;
  app.add_option("checkpoint", path, "The .h5 checkpoint")->required();
  app.add_flag("--json", json, "Print JSON instead of a table");
  app.add_flag("--run-config", run_config, "Print the settings of the run that wrote it (a kamp-train --config file)");
  app.add_option("--export-llmc", export_llmc,
                 "Also write the checkpoint's weights (fp32 master, or the weights of fp32 and pure_bf16 runs) as an "
                 "llm.c model file (gpt2_124M.bin's layout), for llm.c's train_gpt2 and its tools");
  app.add_option("--llmc-dtype", llmc_dtype, "The exported file's values: fp32 (llm.c version 3) or bf16 (version 5)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  kamp::app::add_accept_unhashed_option(app, read_options);
  kamp::app::refuse_empty_values(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return kamp::app::exit_status("kamp-inspect", app.exit(e));
  }
  try {
    // The output rule before the read: the checkpoint is the one file the export must not be.
    const std::vector<kamp::named_path> inputs{{"checkpoint", path}};
    if (!export_llmc.empty()) kamp::check_output({"--export-llmc", export_llmc}, kamp::output_kind::document, inputs);
    if (const std::optional<std::string> config = kamp::session_file_config(path)) {
      if (!export_llmc.empty() || run_config)
        throw std::invalid_argument("'" + path +
                                    "' is a session checkpoint: --export-llmc and --run-config read GPT "
                                    "checkpoints only");
      const nlohmann::json j = describe_session(path, *config);
      if (json)
        std::cout << j.dump(2) << '\n';
      else
        print_session(j);
      std::cout.flush();
      return kamp::app::exit_status("kamp-inspect", 0);
    }
    const kamp::training_state state = kamp::read_checkpoint(path, read_options);
    if (!export_llmc.empty()) {
      kamp::write_llmc_model(export_llmc, {state.model, kamp::exact_weights(state)},
                             llmc_dtype == "bf16" ? kamp::llmc_precision::bf16 : kamp::llmc_precision::fp32, inputs);
      std::fprintf(stderr, "kamp-inspect: wrote %s (llm.c version %d)\n", export_llmc.c_str(),
                   llmc_dtype == "bf16" ? 5 : 3);
    }
    if (run_config) {
      std::cout << state.run_config << '\n';
    } else if (json) {
      std::cout << describe(path, state).dump(2) << '\n';
    } else {
      print(describe(path, state));
    }
    std::cout.flush();
    return kamp::app::exit_status("kamp-inspect", 0);
  } catch (const std::exception& e) {
    // The verdict a resume would give: with --json also on stdout, for scripts that check files.
    if (json) std::cout << nlohmann::json{{"file", path}, {"valid", false}, {"error", e.what()}}.dump(2) << '\n';
    std::fprintf(stderr, "kamp-inspect: error: %s\n", e.what());
    return 1;
  }
}
