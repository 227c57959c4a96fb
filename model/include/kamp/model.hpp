#ifndef KAMP_MODEL_HPP
#define KAMP_MODEL_HPP

// The whole model, one block per layer, lowest first (kamp::kernels and kamp::numeric below them).
#include <kamp/kamp.hpp>

#include <kamp/model/config/activation_recompute.hpp>
#include <kamp/model/config/gpt_config.hpp>
#include <kamp/model/config/precision_policy.hpp>
#include <kamp/model/config/run_request.hpp>
#include <kamp/model/config/session_config.hpp>
#include <kamp/model/config/sharding.hpp>
#include <kamp/model/config/train_options.hpp>

#include <kamp/model/network/activation_layout.hpp>
#include <kamp/model/network/decoder.hpp>
#include <kamp/model/network/fp8_state.hpp>
#include <kamp/model/network/generate.hpp>
#include <kamp/model/network/gpt.hpp>
#include <kamp/model/network/gpt_parameters.hpp>
#include <kamp/model/network/initial_weights.hpp>
#include <kamp/model/network/mlp.hpp>
#include <kamp/model/network/sampling.hpp>
#include <kamp/model/network/unit_hooks.hpp>
#include <kamp/model/network/weight_binding.hpp>

#include <kamp/model/dist/agree.hpp>
#include <kamp/model/dist/communicator.hpp>
#include <kamp/model/dist/environment.hpp>
#include <kamp/model/dist/parallel_options.hpp>

#include <kamp/model/state/checkpoint.hpp>
#include <kamp/model/state/checkpoint_directory.hpp>
#include <kamp/model/state/llmc_model.hpp>
#include <kamp/model/state/state_weights.hpp>
#include <kamp/model/state/training_state.hpp>

#include <kamp/model/training/data.hpp>
#include <kamp/model/training/device_batches.hpp>
#include <kamp/model/training/lr_schedule.hpp>
#include <kamp/model/training/session.hpp>
#include <kamp/model/training/trainer.hpp>

#include <kamp/model/diagnostics/doctor.hpp>
#include <kamp/model/diagnostics/gemm_paths.hpp>
#include <kamp/model/diagnostics/hardware_probe.hpp>
#include <kamp/model/diagnostics/memory_plan.hpp>
#include <kamp/model/diagnostics/memory_tracker.hpp>
#include <kamp/model/diagnostics/precision_rules.hpp>

#endif
