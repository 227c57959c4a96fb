#ifndef KAMP_MODEL_DIST_COMMUNICATOR_HPP
#define KAMP_MODEL_DIST_COMMUNICATOR_HPP

#include <kamp/config.hpp>
#include <kamp/kernels/element_range.hpp>
#include <kamp/numeric/dtype.hpp>

#ifdef KAMP_HAVE_MPI
#include <mpi.h>
#endif

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kamp::dist {

/// \brief A collective under way (MPI's non-blocking collectives), so that the next layer's
/// compute runs while it travels. wait() completes it, with the steps a blocking call would
/// take after MPI (host copies back, the sums moved to their place); a request destroyed
/// unwaited is waited for. A default request is complete.
class request {
 public:
  request();
  request(request&&) noexcept;
  request& operator=(request&&) noexcept;
  ~request();
  void wait();
  /// Started and not yet waited for.
  bool pending() const { return state_ != nullptr; }

 private:
  friend class communicator;
  struct state;
  std::unique_ptr<state> state_;
};

/// \brief The ranks that train one model together, and the few collectives data parallelism
/// needs. Buffers live in the model's memory space (Kokkos' default); MPI reads them directly
/// when they are host memory or the MPI library is GPU-aware, else they are staged through host
/// copies. The default communicator is one process without MPI: rank 0 of 1, every collective
/// does nothing, and MPI need not be initialized (nor kamp built with it).
class communicator {
 public:
  communicator() = default;
#ifdef KAMP_HAVE_MPI
  /// The ranks of `comm` (MPI must be initialized; `comm` is used, not duplicated or freed).
  explicit communicator(MPI_Comm comm);
  MPI_Comm mpi_comm() const { return comm_; }
#endif

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool distributed() const { return size_ > 1; }
  /// MPI reads device buffers directly (CUDA-aware Open MPI); false: host staging.
  bool gpu_aware() const { return gpu_aware_; }

  /// Sum / maximum of a host value over the ranks (every rank gets the result).
  double sum(double x) const;
  /// Element-wise sums modulo 2^64, in place.
  void sum(std::vector<std::uint64_t>& values) const;
  float sum(float x) const;
  int max(int x) const;
  double max(double x) const;
  /// True on every rank when `ok` is true on every rank: ranks agree before a collective path.
  bool all(bool ok) const;
  /// Rank `root`'s bytes on every rank.
  void broadcast(std::vector<unsigned char>& bytes, int root) const;

  /// Sums `buffer` (n = Σ counts fp32 elements on every rank) over the ranks, in place: on
  /// return rank r's part, elements [Σ_{q<r} counts[q], +counts[r]), holds the sums; the rest of
  /// the buffer is scratch. `wire` (fp32 or bf16) is the type on the network and of the partial
  /// sums: bf16 halves the bytes, each addition then rounds to bf16 (nearest even), as PyTorch's
  /// bf16 all-reduce does.
  void reduce_scatter_sum(float* buffer, const std::vector<std::size_t>& counts, dtype wire) const;
  /// reduce_scatter_sum() started: the buffer must stay untouched until the request is waited for.
  request start_reduce_scatter_sum(float* buffer, const std::vector<std::size_t>& counts, dtype wire) const;
  /// In place: every rank's `parts[rank]` elements of `buffer` (elements of
  /// `element_bytes` bytes) sent to every other rank.
  void all_gather(void* buffer, std::size_t element_bytes, const std::vector<element_range>& parts) const;
  /// all_gather() started: the buffer must stay untouched until the request is waited for.
  request start_all_gather(void* buffer, std::size_t element_bytes, const std::vector<element_range>& parts) const;

  /// Ends every rank's process with `code` (MPI_Abort): for an error on one rank, which the
  /// others would wait for in their next collective. One process: std::exit.
  [[noreturn]] void abort(int code) const;

 private:
#ifdef KAMP_HAVE_MPI
  MPI_Comm comm_ = MPI_COMM_NULL;
#endif
  int rank_ = 0, size_ = 1;
  bool gpu_aware_ = false;
};

}  // namespace kamp::dist

#endif
