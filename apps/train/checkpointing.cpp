#include "checkpointing.hpp"

#include <kamp/model/dist/agree.hpp>

#include "output_checks.hpp"
#include "time_limit.hpp"

#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <stdexcept>
#include <utility>

namespace kamp::app {

namespace {

volatile std::sig_atomic_t received = 0;
constexpr int stop_signals[] = {SIGTERM, SIGUSR1, SIGINT};

extern "C" void on_stop_signal(int signal) { received = signal; }

}  // namespace

checkpoint_interval checkpoint_interval::parse(const std::string& text) {
  checkpoint_interval every;
  if (const std::optional<double> seconds = parse_duration(text)) {
    every.seconds = *seconds;
    return every;
  }
  const auto bad = [&] {
    return std::invalid_argument("--checkpoint-every '" + text +
                                 "': give steps (500), or a time with unit s, m or h (90s, 30m, 2h); 0 turns it off");
  };
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw bad();
  }
  if (used != text.size() || !(value >= 0) || value > 1e12 || value != double(std::int64_t(value))) throw bad();
  every.steps = std::int64_t(value);
  return every;
}

bool checkpoint_interval::due(std::int64_t steps_taken, double seconds_since_last) const {
  return (steps > 0 && steps_taken % steps == 0) || (seconds > 0 && seconds_since_last >= seconds);
}

std::int64_t checkpoint_interval::steps_until_due(std::int64_t steps_taken) const {
  return steps > 0 ? steps - steps_taken % steps : std::numeric_limits<std::int64_t>::max();
}

stop_request::stop_request() {
  received = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  // SA_RESTART: the handler is in place during the setup too, whose reads must not fail with EINTR.
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  for (int i = 0; i < 3; ++i) sigaction(stop_signals[i], &action, &previous_[i]);
}

stop_request::~stop_request() {
  for (int i = 0; i < 3; ++i) sigaction(stop_signals[i], &previous_[i], nullptr);
}

int stop_request::signal() const { return received; }

const char* stop_request::name(int signal) {
  switch (signal) {
    case SIGTERM:
      return "SIGTERM";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGINT:
      return "SIGINT";
    default:
      return "a signal";
  }
}

checkpoint_writer::checkpoint_writer(const trainer& t, const checkpoint_directory& dir, std::string run_config)
    : trainer_(t),
      dir_(dir),
      run_config_(std::move(run_config)),
      saved_steps_(t.steps_taken()),
      saved_attempts_(t.attempts()),
      saved_at_(std::chrono::steady_clock::now()) {}

checkpoint_writer::written checkpoint_writer::save() {
  using clock = std::chrono::steady_clock;
  training_state state = trainer_.state();
  state.run_config = run_config_;
  const auto start = clock::now();
  // Each rank writes its own shard into the file; none ever holds the whole state.
  const std::string path = dir_.save(state, trainer_.parallel().ranks);
  last_save_seconds_ = std::chrono::duration<double>(clock::now() - start).count();
  saved_steps_ = trainer_.steps_taken();
  saved_attempts_ = trainer_.attempts();
  saved_at_ = clock::now();
  return {path, last_save_seconds_};
}

void checkpoint_writer::save_if_new(const char* why) {
  if (trainer_.steps_taken() == saved_steps_ && trainer_.attempts() == saved_attempts_) return;
  const written file = save();
  if (trainer_.parallel().ranks.rank() == 0)
    std::printf("checkpoint (%s): %s, %.1f MB in %.2f s\n", why, file.path.c_str(),
                double(std::filesystem::file_size(file.path)) / 1e6, file.seconds);
  flush_or_throw(stdout, "the standard output");
}

double checkpoint_writer::seconds_since_save() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - saved_at_).count();
}

namespace {

// `lines` as rank 0 has them, on every rank.
std::vector<std::string> as_on_rank_0(const std::vector<std::string>& lines, const dist::communicator& ranks) {
  std::string joined;
  for (const auto& l : lines) joined += l + '\n';
  std::vector<unsigned char> bytes(joined.begin(), joined.end());
  ranks.broadcast(bytes, 0);
  std::vector<std::string> received;
  std::string line;
  for (const unsigned char c : bytes) {
    if (c != '\n') {
      line += char(c);
      continue;
    }
    received.push_back(line);
    line.clear();
  }
  return received;
}

// The files --resume `which` tries, in order. Rank 0 lists the directory: every rank then tries
// the same files in the same order, even where a shared file system shows the ranks different
// directory contents for a moment.
std::vector<std::string> checkpoints_to_try(const checkpoint_directory& dir, const std::string& which,
                                            const dist::communicator& ranks) {
  const bool automatic = which == "auto";
  std::vector<std::string> candidates = automatic ? dir.list() : std::vector<std::string>{which};
  if (ranks.rank() == 0)
    for (const auto& stray : dir.unparsable())
      std::fprintf(stderr,
                   "kamp-train: warning: '%s' is named like a checkpoint but its step number does not fit a "
                   "step counter: ignored\n",
                   stray.c_str());
  return automatic && ranks.distributed() ? as_on_rank_0(candidates, ranks) : candidates;
}

// Restores `state`, read from `path`, into `t` and reports it, with the options that changed
// since. Throws std::invalid_argument when the state does not fit `t`.
void restore_and_report(trainer& t, const training_state& state, const std::string& path, bool automatic,
                        const checkpoint_directory& dir, const train_options& now, const precision_policy& policy) {
  t.restore(state);
  std::printf("  resumed from '%s': %lld steps taken (%lld attempted)\n", path.c_str(),
              static_cast<long long>(state.steps_taken), static_cast<long long>(state.attempts));
  // An explicitly named older file starts a new branch: the newer files of the old one
  // must not be what a later --resume auto continues.
  if (!automatic && t.parallel().ranks.rank() == 0)
    for (const auto& retired : dir.retire_after(state.steps_taken))
      std::printf("  note: retired '%s' (a later step of the branch abandoned by resuming from step %lld)\n",
                  retired.c_str(), static_cast<long long>(state.steps_taken));
  auto changed = option_differences(state.options, now);
  if (state.policy.fp32_layers != policy.fp32_layers) changed.push_back("fp32 layer overrides");
  for (const auto& c : changed) std::printf("  note: training option changed since the checkpoint: %s\n", c.c_str());
  if (!changed.empty())
    std::printf("  (with changed options the run is no longer bit-identical to an uninterrupted one)\n");
}

}  // namespace

std::string resume(trainer& t, const checkpoint_directory& dir, const std::string& which, const train_options& now,
                   const checkpoint_read_options& reading, const precision_policy& policy) {
  const bool automatic = which == "auto";
  const dist::communicator& ranks = t.parallel().ranks;
  const std::vector<std::string> candidates = checkpoints_to_try(dir, which, ranks);
  if (candidates.empty()) {
    std::printf("  --resume auto: no checkpoint in '%s' yet: starting at step 0\n", dir.path().c_str());
    return "";
  }
  for (const auto& path : candidates) {
    std::optional<training_state> state;
    // Every rank reads the file; all restore it or none does (restoring is collective).
    std::string problem = dist::agree<checkpoint_error>(
        ranks, "checkpoint '" + path + "': another rank could not read it (is the directory on a shared file system?)",
        [&] {
          // Each rank reads its own shard of the file, whatever number of ranks wrote it.
          state =
              ranks.distributed() ? read_checkpoint(path, ranks, t.shard(), reading) : read_checkpoint(path, reading);
        });
    if (problem.empty()) {
      try {
        restore_and_report(t, *state, path, automatic, dir, now, policy);
        return path;
      } catch (const std::invalid_argument& e) {
        problem = "checkpoint '" + path + "': " + e.what();
      }
    }
    if (!automatic) throw std::runtime_error(problem);
    if (ranks.rank() == 0) std::fprintf(stderr, "kamp-train: warning: --resume auto skips it: %s\n", problem.c_str());
  }
  throw std::runtime_error("--resume auto: none of the " + std::to_string(candidates.size()) + " checkpoints in '" +
                           dir.path() +
                           "' loads (reasons above). Name one with --resume PATH, or move them away "
                           "to start from step 0");
}

}  // namespace kamp::app
