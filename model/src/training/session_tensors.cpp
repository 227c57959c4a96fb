// A session's inputs and outputs given as raw arrays (tensor_ref): gathered into and scattered
// from the fp32 staging rows by element address, for every element type and backend.
#include <kamp/kernels/detail/fence.hpp>
#include <kamp/kernels/execution_spaces.hpp>
#include <kamp/model/training/session.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace kamp::detail {

tensor_matrix session_matrix(const char* api, const char* what, const tensor_ref& t, int columns, bool written,
                             const char* session_space, bool device_session) {
  const tensor_matrix m = as_matrix(t, api, what, written);
  // Built only on failure: a step pays for no string.
  const auto where = [&] { return std::string(api) + ": " + what; };
  if (m.memory == memory_kind::device && !device_session)
    throw std::invalid_argument(where() + " is declared device memory, but the session runs on the host (" +
                                session_space + "); declare it host memory, or build kamp for your GPU");
  if (m.cols != columns)
    throw std::invalid_argument(where() + " has " + std::to_string(m.cols) +
                                " features per sample, the network's config " + std::to_string(columns) + " (a " +
                                std::to_string(t.rank) + "-dimensional array with " +
                                std::to_string(t.batch_dims > 0 ? t.batch_dims : -t.batch_dims) +
                                " batch dimension(s); docs/science-codes.md says how dimensions map)");
  if (m.rows > std::int64_t(1) << 30)
    throw std::invalid_argument(where() + " has " + std::to_string(m.rows) + " samples; a batch has 1 to 2^30");
  return m;
}

namespace {

template <class E>
KOKKOS_INLINE_FUNCTION float value_of(const E* p) {
  if constexpr (std::is_integral_v<E>)
    return float(*p);
  else
    return load_as<float>(p);
}

// f(E{}) for the C++ type of kind k.
template <class F>
void with_element_type(element_kind k, F&& f) {
  switch (k) {
    case element_kind::fp64:
      return f(double{});
    case element_kind::fp32:
      return f(float{});
    case element_kind::bf16:
      return f(bf16{});
    case element_kind::fp16:
      return f(fp16{});
    case element_kind::int32:
      return f(std::int32_t{});
    case element_kind::int64:
      return f(std::int64_t{});
  }
}

template <class Run>
using rows_in = Kokkos::View<float**, Kokkos::LayoutRight, typename Run::memory_space>;

// Each kernel is a named function template: nvcc allows no device lambda inside a generic lambda.
template <class E, class Run>
void gather_as(const Run& run, const tensor_matrix& m, const rows_in<Run>& staged,
               const Kokkos::View<int, typename Run::memory_space>& non_finite) {
  const E* const data = static_cast<const E*>(m.data);
  const strided_index row = m.row, col = m.col;
  const int cols = int(m.cols);
  Kokkos::parallel_reduce(
      "kamp::session::stage_tensor", Kokkos::RangePolicy<Run>(run, 0, int(m.rows)),
      KOKKOS_LAMBDA(int r, int& bad) {
        const E* const p = data + row.offset(r);
        for (int j = 0; j < cols; ++j) {
          const float v = value_of(p + col.offset(j));
          staged(r, j) = v;
          bad += v - v == 0.0f ? 0 : 1;
        }
      },
      non_finite);
}

template <class E, class Run>
void scatter_as(const Run& run, const rows_in<Run>& staged, const tensor_matrix& m) {
  E* const data = static_cast<E*>(const_cast<void*>(m.data));
  const strided_index row = m.row, col = m.col;
  const int cols = int(m.cols);
  Kokkos::parallel_for(
      "kamp::session::unstage_tensor", Kokkos::RangePolicy<Run>(run, 0, int(m.rows)), KOKKOS_LAMBDA(int r) {
        E* const p = data + row.offset(r);
        for (int j = 0; j < cols; ++j) {
          E* const out = p + col.offset(j);
          const float value = staged(r, j);
          if constexpr (std::is_same_v<E, double>)
            *out = double(value);
          else
            store_nearest(out, value);
        }
      });
}

template <class Run>
void gather(const Run& run, const tensor_matrix& m, const rows_in<Run>& staged,
            const Kokkos::View<int, typename Run::memory_space>& non_finite) {
  with_element_type(m.type, [&](auto e) { gather_as<decltype(e)>(run, m, staged, non_finite); });
}

template <class Run>
void scatter(const Run& run, const rows_in<Run>& staged, const tensor_matrix& m) {
  with_element_type(m.type, [&](auto e) {
    if constexpr (!std::is_integral_v<decltype(e)>)
      scatter_as<decltype(e)>(run, staged, m);  // as_matrix refuses integer outputs
  });
}

template <class ExecutionSpace>
constexpr bool host_reachable = Kokkos::SpaceAccessibility<ExecutionSpace, Kokkos::HostSpace>::accessible;

}  // namespace

template <class ExecutionSpace>
void stage_tensor(const ExecutionSpace& space, const tensor_matrix& source,
                  const typename session_engine<ExecutionSpace>::staging& staged,
                  const typename session_engine<ExecutionSpace>::flag& non_finite) {
  if constexpr (!host_reachable<ExecutionSpace>) {
    if (source.memory == memory_kind::host) {
      const Kokkos::DefaultHostExecutionSpace host;
      rows_in<Kokkos::DefaultHostExecutionSpace> rows("kamp::session::host_rows", staged.extent(0), staged.extent(1));
      Kokkos::View<int, Kokkos::HostSpace> bad("kamp::session::host_non_finite");
      gather(host, source, rows, bad);
      detail::fence(host, "the staged rows are copied to the device");
      Kokkos::deep_copy(space, staged, rows);
      Kokkos::deep_copy(space, non_finite, bad);
      detail::fence(space, "the host buffers go out of scope");
      return;
    }
  }
  gather(space, source, staged, non_finite);
}

template <class ExecutionSpace>
void unstage_tensor(const ExecutionSpace& space, const typename session_engine<ExecutionSpace>::staging& staged,
                    const tensor_matrix& target) {
  if constexpr (!host_reachable<ExecutionSpace>) {
    if (target.memory == memory_kind::host) {
      const Kokkos::DefaultHostExecutionSpace host;
      rows_in<Kokkos::DefaultHostExecutionSpace> rows("kamp::session::host_rows", staged.extent(0), staged.extent(1));
      Kokkos::deep_copy(space, rows, staged);
      detail::fence(space, "the host scatters the staged outputs");
      scatter(host, rows, target);
      detail::fence(host, "the caller reads its outputs");
      return;
    }
  }
  scatter(space, staged, target);
}

#define KAMP_SESSION_TENSORS_INSTANTIATE_(Space)                                                        \
  template void stage_tensor(const Space&, const tensor_matrix&, const session_engine<Space>::staging&, \
                             const session_engine<Space>::flag&);                                       \
  template void unstage_tensor(const Space&, const session_engine<Space>::staging&, const tensor_matrix&);
KAMP_FOR_EACH_EXECUTION_SPACE(KAMP_SESSION_TENSORS_INSTANTIATE_)
#undef KAMP_SESSION_TENSORS_INSTANTIATE_

}  // namespace kamp::detail
