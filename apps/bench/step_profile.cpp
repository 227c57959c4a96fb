#include "step_profile.hpp"

#include <Kokkos_Core.hpp>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace kamp::bench {

namespace {

using clock = std::chrono::steady_clock;

struct ledger {
  bool active = false;
  std::map<std::string, double> seconds;
  std::vector<std::pair<std::string, clock::time_point>> regions;  ///< open regions, outermost first
  int gemm_depth = 0;                                              ///< open kamp::gemm regions
  std::map<std::uint64_t, std::pair<std::string, clock::time_point>> kernels;
  std::uint64_t next_kernel = 0;
  std::vector<std::pair<std::string, double>> gemm_calls;
};

ledger& books() {
  static ledger l;
  return l;
}

bool is_gemm(const std::string& name) { return name.rfind("kamp::gemm[", 0) == 0; }

void begin_kernel(const char* name, std::uint32_t, std::uint64_t* id) {
  ledger& l = books();
  *id = l.next_kernel++;
  if (l.gemm_depth == 0) l.kernels[*id] = {name, clock::now()};
}

void end_kernel(std::uint64_t id) {
  ledger& l = books();
  const auto it = l.kernels.find(id);
  if (it == l.kernels.end()) return;
  l.seconds[it->second.first] += std::chrono::duration<double>(clock::now() - it->second.second).count();
  l.kernels.erase(it);
}

void push_region(const char* name) {
  ledger& l = books();
  l.regions.emplace_back(name, clock::now());
  if (is_gemm(name)) ++l.gemm_depth;
}

void pop_region() {
  ledger& l = books();
  if (l.regions.empty()) return;
  const auto [name, start] = l.regions.back();
  l.regions.pop_back();
  if (!is_gemm(name)) return;
  if (--l.gemm_depth > 0) return;
  const double seconds = std::chrono::duration<double>(clock::now() - start).count();
  l.seconds[name] += seconds;
  l.gemm_calls.emplace_back(name, seconds);
}

}  // namespace

static void install(decltype(&begin_kernel) begin, decltype(&end_kernel) end, decltype(&push_region) push,
                    decltype(&pop_region) pop) {
  namespace tools = Kokkos::Tools::Experimental;
  tools::set_begin_parallel_for_callback(begin);
  tools::set_begin_parallel_reduce_callback(begin);
  tools::set_begin_parallel_scan_callback(begin);
  tools::set_end_parallel_for_callback(end);
  tools::set_end_parallel_reduce_callback(end);
  tools::set_end_parallel_scan_callback(end);
  tools::set_push_region_callback(push);
  tools::set_pop_region_callback(pop);
}

step_profile::step_profile() {
  ledger& l = books();
  if (l.active) throw std::logic_error("kamp::bench::step_profile: only one profile at a time");
  l = ledger();
  l.active = true;
  install(begin_kernel, end_kernel, push_region, pop_region);
}

step_profile::~step_profile() {
  install(nullptr, nullptr, nullptr, nullptr);
  books().active = false;
}

const std::map<std::string, double>& step_profile::seconds() const { return books().seconds; }

const std::vector<std::pair<std::string, double>>& step_profile::gemm_calls() const { return books().gemm_calls; }

}  // namespace kamp::bench
