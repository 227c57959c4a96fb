#include "metrics.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>
#include <cstdio>
#include <stdexcept>

namespace kamp::app {

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void metrics_writer::check_name(const std::string& path) {
  if (!ends_with(path, ".csv") && !ends_with(path, ".jsonl") && !ends_with(path, ".json"))
    throw std::invalid_argument("--metrics '" + path + "': the name must end in .csv or .jsonl (the format)");
}

metrics_writer::metrics_writer(const std::string& path, bool append, bool fp8,
                               const std::vector<kamp::named_path>& inputs)
    : csv_(ends_with(path, ".csv")),
      fp8_(fp8),
      out_((check_name(path), kamp::named_path{"--metrics", path}), append, inputs) {
  if (csv_ && !append)
    out_.write(std::string("step,loss,val_loss,scale,skipped,grad_norm,lr,tokens_per_s") +
               (fp8_ ? ",fp8_saturated,fp8_underflowed" : "") + "\n");
}

void metrics_writer::write(const step_report& r, std::optional<double> validation_loss,
                           const std::vector<fp8_tensor_report>& fp8) {
  const double tps = r.tokens / r.seconds;
  if (csv_) {
    char line[256];
    std::snprintf(line, sizeof line, "%lld,%.6f,%s,%g,%d,%.6g,%.6g,%.1f", static_cast<long long>(r.step), r.loss,
                  validation_loss ? std::to_string(*validation_loss).c_str() : "", r.scale, r.skipped ? 1 : 0,
                  r.grad_norm, r.lr, tps);
    std::string row = line;
    if (fp8_) {
      std::uint64_t saturated = 0, underflowed = 0;
      for (const auto& t : fp8) saturated += t.saturated, underflowed += t.underflowed;
      row += fp8.empty() ? std::string(",,") : "," + std::to_string(saturated) + "," + std::to_string(underflowed);
    }
    out_.write(row + "\n");
    return;
  }
  nlohmann::json j{{"step", r.step},           {"loss", r.loss}, {"scale", r.scale},   {"skipped", r.skipped},
                   {"grad_norm", r.grad_norm}, {"lr", r.lr},     {"tokens_per_s", tps}};
  if (validation_loss) j["val_loss"] = *validation_loss;
  for (const auto& t : fp8) {
    j["fp8_saturated"][t.linear][t.role] = t.saturated;
    j["fp8_underflowed"][t.linear][t.role] = t.underflowed;
  }
  out_.write(j.dump() + '\n');
}

progress::progress(int total, int every, bool plain_lines)
    : total_(total), every_(every), tty_(!plain_lines && isatty(STDOUT_FILENO) != 0) {}

void progress::update(const step_report& r, std::int64_t taken, std::optional<double> validation_loss) {
  char stats[192];
  std::snprintf(stats, sizeof stats, "loss %.4f%s | scale %g | grad-norm %.3g | lr %.3g | %.0f tok/s%s", r.loss,
                validation_loss ? (" val " + std::to_string(*validation_loss).substr(0, 6)).c_str() : "", r.scale,
                r.grad_norm, r.lr, r.tokens / r.seconds, r.skipped ? " | SKIPPED (inf/NaN gradients)" : "");
  if (tty_) {
    const int width = 24, filled = total_ > 0 ? int(width * taken / total_) : width;
    std::printf("\r[%s%s] %lld/%d %s\033[K", std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(),
                static_cast<long long>(taken), total_, stats);
    if (validation_loss || r.skipped) std::printf("\n");
    flush_or_throw(stdout, "the standard output");
  } else if (r.skipped || validation_loss || taken % every_ == 0 || taken == total_ || taken == 1) {
    std::printf("step %lld/%d %s\n", static_cast<long long>(taken), total_, stats);
    flush_or_throw(stdout, "the standard output");
  }
}

void progress::finish() {
  if (tty_) std::printf("\n");
}

}  // namespace kamp::app
