#include "slurm_job.hpp"

#include <sys/wait.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <stdexcept>

namespace kamp::app {

namespace {

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

bool all_digits(const std::string& text) {
  if (text.empty() || text.size() > 18) return false;
  for (char c : text)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// The standard output of `command` (stderr joined) and its exit status.
std::pair<std::string, int> run(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return {"cannot start a shell", -1};
  std::string out;
  char chunk[256];
  while (std::fgets(chunk, sizeof chunk, pipe)) out += chunk;
  const int status = pclose(pipe);
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

}  // namespace

std::optional<slurm_job> slurm_job::from_environment() {
  slurm_job job;
  job.id = environment("SLURM_JOB_ID");
  if (job.id.empty()) return std::nullopt;
  job.array_job_id = environment("SLURM_ARRAY_JOB_ID");
  job.array_task_id = environment("SLURM_ARRAY_TASK_ID");
  const std::string restarts = environment("SLURM_RESTART_COUNT");
  if (!restarts.empty()) {
    if (!all_digits(restarts) || restarts.size() > 9)
      throw std::invalid_argument("SLURM_RESTART_COUNT='" + restarts +
                                  "' is not a count: Slurm sets it to the job's requeue count (unset it otherwise)");
    job.restart_count = std::stoi(restarts);
  }
  return job;
}

std::string slurm_job::describe() const {
  std::string text = "Slurm job " + id;
  if (!array_task_id.empty()) text += " (array job " + array_job_id + ", task " + array_task_id + ")";
  return text + ", restart " + std::to_string(restart_count);
}

std::optional<slurm_job::end> slurm_job::end_time() const {
  if (const std::string end = environment("SLURM_JOB_END_TIME"); !end.empty()) {
    if (!all_digits(end)) throw std::invalid_argument("SLURM_JOB_END_TIME='" + end + "' is not a time in Unix seconds");
    return slurm_job::end{std::chrono::system_clock::from_time_t(std::time_t(std::stoll(end))), "SLURM_JOB_END_TIME"};
  }
  if (!all_digits(id)) throw std::invalid_argument("SLURM_JOB_ID='" + id + "' is not a job id");
  // Unix seconds, whatever time format the user's environment asks squeue for, with no
  // daylight-saving ambiguity.
  const std::string command = "SLURM_TIME_FORMAT=%s squeue -h -j " + id + " -o %e";
  const auto [out, status] = run(command);
  if (status != 0)
    throw std::runtime_error("--time-limit auto: '" + command + "' failed (" +
                             (out.empty() ? "exit status " + std::to_string(status) : out) +
                             "): give the time limit as a duration (--time-limit 2h) instead");
  // The last line: a warning on stderr may come before it.
  const std::string end = out.substr(out.find_last_of('\n') == std::string::npos ? 0 : out.find_last_of('\n') + 1);
  if (all_digits(end))
    return slurm_job::end{std::chrono::system_clock::from_time_t(std::time_t(std::stoll(end))), "squeue"};
  if (end == "N/A" || end == "NONE" || end == "Unknown" || end == "UNLIMITED") return std::nullopt;
  throw std::runtime_error("--time-limit auto: squeue gave the end of job " + id + " as '" + out +
                           "', not a time: give the time limit as a duration (--time-limit 2h) instead");
}

}  // namespace kamp::app
