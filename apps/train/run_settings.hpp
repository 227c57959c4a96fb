#ifndef KAMP_APPS_TRAIN_RUN_SETTINGS_HPP
#define KAMP_APPS_TRAIN_RUN_SETTINGS_HPP

#include <kamp/model/config/gpt_config.hpp>
#include <kamp/model/config/precision_policy.hpp>
#include <kamp/model/config/run_request.hpp>
#include <kamp/model/config/sharding.hpp>
#include <kamp/model/config/train_options.hpp>
#include <kamp/model/state/llmc_model.hpp>
#include <kamp/model/training/data.hpp>
#include <kamp/numeric/dtype.hpp>

#include "checkpointing.hpp"
#include "model_options.hpp"
#include "slurm_job.hpp"
#include "time_limit.hpp"
#include "tokenizer.hpp"

#include <optional>
#include <string>

namespace kamp::app {

/// \brief Every kamp-train option, as given (the strings are what a checkpoint's run_config
/// records), and below them the values kamp-train's validation parses from them.
struct run_settings {
  gpt_config model;
  precision_options precision;
  train_options train;
  std::string data, metrics, summary;
  std::string token_format = "llmc";  ///< --token-format, parsed into token_files
  std::string config_file;            ///< --config, if given
  double validation_fraction = 0.1;
  int eval_every = 50, eval_batches = 8, log_every = 10, sample_every = 0, sample_tokens = 64;
  std::string checkpoint_dir = "checkpoints", checkpoint_every = "0", resume;
  std::string time_limit_text = "none";  ///< --time-limit
  int keep_checkpoints = 3;
  run_request request;
  bool diagnose = false, overwrite_checkpoints = false;
  std::string recompute = "none";              ///< --recompute, parsed into train.recompute
  std::string tokenizer, tokenizer_digest;     ///< --tokenizer, and the digest the run records
  std::optional<kamp::app::tokenizer> pieces;  ///< --tokenizer, loaded while validating
  bool vocab_given = false;                    ///< --vocab was given (on the command line or in --config)
  std::string init_from_llmc;                  ///< --init-from-llmc: an llm.c model file to start from
  bool shape_given = false;                    ///< a model option (--preset, --layers, ...) was on the command line
  std::optional<llmc_model> imported;          ///< the file's weights, read while validating
  checkpoint_read_options reading;             ///< what --resume accepts beyond a fully verifiable file
  std::string gradient_reduction = "fp32";
  std::string sharding = "optimizer";
  bool reshard_after_forward = true;

  precision_policy policy;                                    ///< from `precision`
  kamp::sharding sharding_level = kamp::sharding::optimizer;  ///< from `sharding`
  dtype gradient_dtype = dtype::fp32;                         ///< from `gradient_reduction`
  token_file_format token_files = token_file_format::llmc;    ///< from `token_format`
  checkpoint_interval periodic_checkpoints;                   ///< from `checkpoint_every`
  std::optional<slurm_job> job;                               ///< from the environment
  kamp::app::time_limit deadline;                             ///< from `time_limit` (and `job`)

  /// The files the run reads (--config, --data, --tokenizer, --init-from-llmc, a --resume file),
  /// which no output may be.
  std::vector<named_path> inputs() const {
    std::vector<named_path> out;
    for (const named_path& p : {named_path{"--config", config_file}, named_path{"--data", data},
                                named_path{"--tokenizer", tokenizer}, named_path{"--init-from-llmc", init_from_llmc},
                                named_path{"--resume", resume == "auto" ? std::string() : resume}})
      if (!p.path.empty()) out.push_back(p);
    return out;
  }
  /// The files the run writes besides its checkpoints.
  std::vector<named_path> outputs() const {
    std::vector<named_path> out;
    if (!metrics.empty()) out.push_back({"--metrics", metrics});
    if (!summary.empty()) out.push_back({"--summary", summary});
    return out;
  }
};

}  // namespace kamp::app

#endif
