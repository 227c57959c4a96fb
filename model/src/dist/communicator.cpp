#include <kamp/kernels/cast.hpp>
#include <kamp/kernels/detail/fence.hpp>
#include <kamp/model/dist/communicator.hpp>
#include <kamp/numeric/convert.hpp>

#include "dist/mpi_check.hpp"

#include <Kokkos_Core.hpp>

#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <stdexcept>

namespace kamp::dist {

namespace {

using memory_space = Kokkos::DefaultExecutionSpace::memory_space;
constexpr bool host_memory = Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space>::accessible;

int as_count(std::size_t n) {
  if (n > std::size_t(INT_MAX))
    throw std::length_error("kamp::dist: " + std::to_string(n) +
                            " elements exceed MPI's int counts and offsets (2^31 - 1): the model is too large "
                            "for kamp's MPI messages");
  return int(n);
}

using device_bytes = Kokkos::View<unsigned char*, memory_space, Kokkos::MemoryUnmanaged>;
using host_bytes = Kokkos::View<unsigned char*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
using floats = Kokkos::View<float*, memory_space, Kokkos::MemoryUnmanaged>;

std::vector<int> int_counts(const std::vector<std::size_t>& counts) {
  std::vector<int> c(counts.size());
  for (std::size_t r = 0; r < counts.size(); ++r) c[r] = as_count(counts[r]);
  return c;
}

// bf16 partial sums: each addition in fp32, rounded to nearest even (MPI calls it on host data).
void bf16_sum(void* in, void* inout, int* length, MPI_Datatype*) {
  const auto* a = static_cast<const std::uint16_t*>(in);
  auto* b = static_cast<std::uint16_t*>(inout);
  for (int i = 0; i < *length; ++i)
    b[i] = from_float<bf16>(to_float(bf16::from_bits(a[i])) + to_float(bf16::from_bits(b[i]))).bits;
}

bool gpu_aware_mpi() {
  if (const char* force = std::getenv("KAMP_GPU_AWARE_MPI")) return std::strcmp(force, "1") == 0;
#if defined(KOKKOS_ENABLE_CUDA) && defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

}  // namespace

communicator::communicator(MPI_Comm comm) : comm_(comm) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) throw std::logic_error("kamp::dist::communicator: MPI is not initialized");
  check(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(comm, &size_), "MPI_Comm_size");
  gpu_aware_ = !host_memory && gpu_aware_mpi();
}

double communicator::sum(double x) const {
  if (size_ > 1) check(MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_DOUBLE, MPI_SUM, comm_), "MPI_Allreduce");
  return x;
}

void communicator::sum(std::vector<std::uint64_t>& values) const {
  if (size_ > 1)
    check(MPI_Allreduce(MPI_IN_PLACE, values.data(), as_count(values.size()), MPI_UINT64_T, MPI_SUM, comm_),
          "MPI_Allreduce");
}

float communicator::sum(float x) const {
  if (size_ > 1) check(MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_FLOAT, MPI_SUM, comm_), "MPI_Allreduce");
  return x;
}

int communicator::max(int x) const {
  if (size_ > 1) check(MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_MAX, comm_), "MPI_Allreduce");
  return x;
}

double communicator::max(double x) const {
  if (size_ > 1) check(MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_DOUBLE, MPI_MAX, comm_), "MPI_Allreduce");
  return x;
}

bool communicator::all(bool ok) const {
  int v = ok ? 1 : 0;
  if (size_ > 1) check(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, comm_), "MPI_Allreduce");
  return v != 0;
}

void communicator::broadcast(std::vector<unsigned char>& bytes, int root) const {
  if (size_ == 1) return;
  unsigned long long n = bytes.size();
  check(MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, root, comm_), "MPI_Bcast");
  bytes.resize(n);
  check(MPI_Bcast(bytes.data(), as_count(n), MPI_BYTE, root, comm_), "MPI_Bcast");
}

struct request::state {
  MPI_Request mpi = MPI_REQUEST_NULL;
  std::vector<int> counts, displacements;  ///< MPI reads them until the collective completes
  std::vector<unsigned char> staged;       ///< the host copy MPI works on when it cannot read the buffer
  Kokkos::View<bf16*, memory_space> narrow;
  std::function<void()> finish;  ///< after MPI: copy back, move the result into place

  // Where MPI works on `bytes` bytes at `data` (model memory): the buffer itself when MPI can
  // read it, else a host copy (filled now when `in`; copy_back() returns it).
  void* address(void* data, std::size_t bytes, bool direct, bool in) {
    if (host_memory || direct) return data;
    staged.resize(bytes);
    if (in) Kokkos::deep_copy(host_bytes(staged.data(), bytes), device_bytes(static_cast<unsigned char*>(data), bytes));
    return staged.data();
  }
  void copy_back(void* data) {
    if (staged.empty()) return;
    Kokkos::deep_copy(device_bytes(static_cast<unsigned char*>(data), staged.size()),
                      host_bytes(staged.data(), staged.size()));
  }
};

request::request() = default;
request::request(request&&) noexcept = default;
request& request::operator=(request&& o) noexcept {
  if (this != &o) {
    try {
      wait();
    } catch (...) {
      // The next collective of the ranks fails with MPI's error.
    }
    state_ = std::move(o.state_);
  }
  return *this;
}
request::~request() {
  try {
    wait();
  } catch (...) {
    // A destructor cannot report it; the next collective of the ranks fails with MPI's error.
  }
}

void request::wait() {
  if (!state_) return;
  const std::unique_ptr<state> s = std::move(state_);
  check(MPI_Wait(&s->mpi, MPI_STATUS_IGNORE), "MPI_Wait");
  if (s->finish) s->finish();
}

void communicator::reduce_scatter_sum(float* buffer, const std::vector<std::size_t>& counts, dtype wire) const {
  start_reduce_scatter_sum(buffer, counts, wire).wait();
}

request communicator::start_reduce_scatter_sum(float* buffer, const std::vector<std::size_t>& counts,
                                               dtype wire) const {
  if (counts.size() != std::size_t(size_))
    throw std::invalid_argument("kamp::dist::reduce_scatter_sum: one count per rank is needed");
  if (wire != dtype::fp32 && wire != dtype::bf16)
    throw std::invalid_argument(
        std::string("kamp::dist::reduce_scatter_sum: gradients are reduced in fp32 or bf16, not ") + name(wire));
  request out;
  if (size_ == 1) return out;
  std::size_t n = 0, first = 0;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) first = n;
    n += counts[r];
  }
  const std::size_t mine = counts[rank_];
  out.state_ = std::make_unique<request::state>();
  request::state& s = *out.state_;
  s.counts = int_counts(counts);
  const Kokkos::DefaultExecutionSpace ex;
  if (wire == dtype::fp32) {
    // Staged even with GPU-aware MPI: Open MPI's CUDA support stages reduce_scatter_block but not
    // reduce_scatter, whose sums would then run on the host over device pointers. MPI leaves the
    // in-place result at the start of the buffer; it moves to this rank's part (for equal
    // shards the two ranges never overlap, else through a copy).
    void* data = s.address(buffer, n * sizeof(float), false, true);
    check(MPI_Ireduce_scatter(MPI_IN_PLACE, data, s.counts.data(), MPI_FLOAT, MPI_SUM, comm_, &s.mpi),
          "MPI_Ireduce_scatter");
    s.finish = [&s, buffer, first, mine, ex] {
      s.copy_back(buffer);
      if (first == 0) return;
      if (first >= mine) {
        Kokkos::deep_copy(ex, floats(buffer + first, mine), floats(buffer, mine));
      } else {
        Kokkos::View<float*, memory_space> moved("kamp::dist::wire", mine);
        Kokkos::deep_copy(ex, moved, floats(buffer, mine));
        Kokkos::deep_copy(ex, floats(buffer + first, mine), moved);
      }
      kamp::detail::fence(ex, "the reduced shard is in place");
    };
    return out;
  }
  // bf16 on the wire: narrowed on the device, summed by a user-defined operation, which MPI
  // applies to host data only.
  s.narrow = Kokkos::View<bf16*, memory_space>("kamp::dist::wire", n);
  cast(ex, s.narrow, Kokkos::View<const float*, memory_space, Kokkos::MemoryUnmanaged>(buffer, n));
  kamp::detail::fence(ex, "MPI reads the bf16 gradients");
  // Created once per process (MPI_Finalize releases it).
  static const MPI_Op op = [] {
    MPI_Op created;
    check(MPI_Op_create(&bf16_sum, 1, &created), "MPI_Op_create");
    return created;
  }();
  void* data = s.address(s.narrow.data(), n * sizeof(bf16), false, true);
  check(MPI_Ireduce_scatter(MPI_IN_PLACE, data, s.counts.data(), MPI_UINT16_T, op, comm_, &s.mpi),
        "MPI_Ireduce_scatter");
  s.finish = [&s, buffer, first, mine, ex] {
    s.copy_back(s.narrow.data());
    cast(ex, floats(buffer + first, mine), Kokkos::subview(s.narrow, std::make_pair(std::size_t(0), mine)));
    kamp::detail::fence(ex, "the reduced shard is in place");
  };
  return out;
}

void communicator::all_gather(void* buffer, std::size_t element_bytes, const std::vector<element_range>& parts) const {
  start_all_gather(buffer, element_bytes, parts).wait();
}

request communicator::start_all_gather(void* buffer, std::size_t element_bytes,
                                       const std::vector<element_range>& parts) const {
  request out;
  if (size_ == 1) return out;
  if (parts.size() != std::size_t(size_))
    throw std::invalid_argument("kamp::dist::all_gather: one part per rank is needed");
  out.state_ = std::make_unique<request::state>();
  request::state& s = *out.state_;
  s.counts.resize(parts.size());
  s.displacements.resize(parts.size());
  std::size_t end = 0;
  for (std::size_t r = 0; r < parts.size(); ++r) {
    s.counts[r] = as_count(parts[r].size());
    s.displacements[r] = as_count(parts[r].first);
    end = std::max(end, parts[r].last);
  }
  MPI_Datatype element;
  check(MPI_Type_contiguous(as_count(element_bytes), MPI_BYTE, &element), "MPI_Type_contiguous");
  MPI_Type_commit(&element);
  void* data = s.address(buffer, end * element_bytes, gpu_aware_, true);
  const int started = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, s.counts.data(), s.displacements.data(),
                                      element, comm_, &s.mpi);
  MPI_Type_free(&element);  // MPI keeps it until the collective completes
  check(started, "MPI_Iallgatherv");
  s.finish = [&s, buffer] { s.copy_back(buffer); };
  return out;
}

void communicator::abort(int code) const {
  if (size_ > 1) MPI_Abort(comm_, code);
  std::exit(code);
}

}  // namespace kamp::dist
