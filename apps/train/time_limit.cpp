#include "time_limit.hpp"

#include <ctime>
#include <stdexcept>

namespace kamp::app {

std::optional<double> parse_duration(const std::string& text) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const std::string unit = text.substr(used);
  if (!(value >= 0) || value > 1e12 || (unit != "s" && unit != "m" && unit != "h")) return std::nullopt;
  return value * (unit == "s" ? 1 : unit == "m" ? 60 : 3600);
}

namespace {

std::string local_time(std::chrono::system_clock::time_point t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm local{};
  localtime_r(&seconds, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &local);
  return text;
}

}  // namespace

time_limit time_limit::parse(const std::string& text, const std::optional<slurm_job>& job) {
  time_limit limit;
  const auto now = std::chrono::system_clock::now();
  if (text == "none") return limit;
  if (text == "auto") {
    if (!job)
      throw std::invalid_argument(
          "--time-limit auto: this is not a Slurm job (SLURM_JOB_ID is not set): give a duration (2h) or none");
    if (const std::optional<slurm_job::end> end = job->end_time()) {
      limit.end_ = end->at;
      limit.description_ =
          "at " + local_time(end->at) + " (the end of Slurm job " + job->id + ", from " + end->source + ")";
    }
    return limit;
  }
  const std::optional<double> seconds = parse_duration(text);
  if (!seconds || *seconds <= 0)
    throw std::invalid_argument("--time-limit '" + text +
                                "': give auto (the Slurm job's end), a duration with unit s, m or h (90s, 30m, "
                                "2h) or none");
  limit.end_ =
      now + std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(*seconds));
  limit.description_ = "at " + local_time(*limit.end_) + " (" + text + " from the start)";
  return limit;
}

double time_limit::seconds_left() const {
  return std::chrono::duration<double>(*end_ - std::chrono::system_clock::now()).count();
}

double time_limit::reserve(double next_steps_seconds, double checkpoint_seconds) {
  return 2 * (next_steps_seconds + checkpoint_seconds) + exit_seconds;
}

}  // namespace kamp::app
