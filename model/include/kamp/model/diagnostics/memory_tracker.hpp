#ifndef KAMP_MODEL_DIAGNOSTICS_MEMORY_TRACKER_HPP
#define KAMP_MODEL_DIAGNOSTICS_MEMORY_TRACKER_HPP

#include <kamp/model/diagnostics/memory_plan.hpp>

#include <string>

namespace kamp {

/// \brief Measures what kamp allocates, by category, through Kokkos' tool interface: every
/// View allocation in the default memory space is attributed by its label (kamp::gpt::grads →
/// gradients, kamp::optimizer::master → master, ...). Reports current and peak bytes.
///
/// One tracker at a time (Kokkos has one set of tool callbacks); construct it after
/// Kokkos::initialize and before the allocations to measure. Not for use beside a Kokkos tool
/// loaded through KOKKOS_TOOLS_LIBS, whose callbacks it would replace.
class memory_tracker {
 public:
  memory_tracker();
  ~memory_tracker();
  memory_tracker(const memory_tracker&) = delete;
  memory_tracker& operator=(const memory_tracker&) = delete;

  /// Bytes allocated now, by category (`other`: scalars, scratch of kernels).
  memory_plan current() const;
  /// The largest value each category reached (categories peak at different moments).
  memory_plan peak() const;
  /// Bytes in allocations with no kamp category (labels of user code, transient buffers), peak.
  double peak_other() const;
  /// The largest total of all allocations at one moment.
  double peak_total() const;
};

}  // namespace kamp

#endif
