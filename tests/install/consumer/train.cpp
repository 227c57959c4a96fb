// A user's trainer built on the installed kamp::model: one amp_bf16 step of a small GPT runs and
// gives a finite loss, and its checkpoint (HDF5, linked through kamp's export) reads back.
#include <kamp/model/state/checkpoint.hpp>
#include <kamp/model/training/trainer.hpp>

#include <cmath>
#include <cstdio>

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  kamp::gpt_config config;
  config.layers = 1;
  config.d_model = 32;
  config.heads = 2;
  config.mlp = 64;
  config.context = 16;
  kamp::train_options options;
  options.batch = 2;
  const kamp::token_dataset data(kamp::default_corpus(4096), 0.1, config.context, "built-in corpus");
  kamp::trainer trainer(config, kamp::precision_policy{}, options, data);
  const auto r = trainer.step();
  kamp::write_checkpoint("consumer.h5", trainer.state());
  const auto loaded = kamp::read_checkpoint("consumer.h5");
  std::printf("kamp::model consumer: loss %g, skipped %d, checkpoint at step %lld\n", r.loss, int(r.skipped),
              static_cast<long long>(loaded.steps_taken));
  return std::isfinite(r.loss) && !r.skipped && loaded.steps_taken == 1 ? 0 : 1;
}
