#ifndef KAMP_MODEL_TRAINING_DEVICE_BATCHES_HPP
#define KAMP_MODEL_TRAINING_DEVICE_BATCHES_HPP

#include <kamp/model/training/data.hpp>
#include <kamp/numeric/counter_random.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kamp {

namespace detail {

/// The random stream of a split: validation windows never depend on the training position.
KOKKOS_INLINE_FUNCTION std::uint64_t split_stream(std::uint64_t seed, bool train) { return seed * 2 + (train ? 0 : 1); }

/// The first token of window w of batch `index` among `windows` possible starts: what
/// token_dataset::sample and device_batches::sample both draw.
KOKKOS_INLINE_FUNCTION std::size_t window_start(std::uint64_t stream, std::uint64_t index, int batch, int w,
                                                std::uint64_t windows) {
  const std::uint64_t k = 2 * (index * std::uint64_t(batch) + std::uint64_t(w));
  const std::uint64_t r = (std::uint64_t(counter_random(stream, k)) << 32) | counter_random(stream, k + 1);
  return std::size_t(r % windows);
}

/// The segment holding global window g: the last s < segments with first_window[s] <= g
/// (first_window holds each segment's first window and, at [segments], the total).
KOKKOS_INLINE_FUNCTION int segment_of(const std::uint64_t* first_window, int segments, std::uint64_t g) {
  int lo = 0, hi = segments;
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    if (first_window[mid] <= g)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

}  // namespace detail

/// \brief A token_dataset on the device: each batch is cut from it by a kernel, so a training
/// step moves no tokens between host and device. Batch `index` holds the same windows as
/// token_dataset::sample's. Where the execution space reads host memory the kernel reads the
/// dataset's own (mapped) tokens; a GPU gets one copy of them, made here.
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
class device_batches {
 public:
  using memory_space = typename ExecutionSpace::memory_space;
  using token_view = Kokkos::View<const int**, Kokkos::LayoutRight, memory_space>;

  /// Batches of `batch` windows of data.context() tokens. The trainer checks the tokens against
  /// the vocabulary (token_dataset::max_token()).
  device_batches(const token_dataset& data, int batch, const ExecutionSpace& space = ExecutionSpace())
      : train_(upload(data, token_dataset::split::train)),
        validation_(upload(data, token_dataset::split::validation)),
        tokens_("kamp::batch::tokens", batch, data.context()),
        targets_("kamp::batch::targets", batch, data.context()),
        space_(space),
        owner_(data.owner()) {}

  /// Cuts batch `index` of `part` (seed as for token_dataset::sample) into tokens()/targets().
  void sample(token_dataset::split part, std::uint64_t seed, std::uint64_t index) const {
    const bool train = part == token_dataset::split::train;
    const split_tokens& from = train ? train_ : validation_;
    const auto bases = from.bases;
    const auto first_window = from.first_window;
    const auto tokens = tokens_;
    const auto targets = targets_;
    const int batch = int(tokens_.extent(0)), context = int(tokens_.extent(1)), segments = int(bases.extent(0));
    const std::uint64_t stream = detail::split_stream(seed, train), windows = from.windows;
    Kokkos::parallel_for(
        "kamp::batch::sample", Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(space_, {0, 0}, {batch, context}),
        KOKKOS_LAMBDA(int w, int t) {
          const std::uint64_t g = detail::window_start(stream, index, batch, w, windows);
          const int s = detail::segment_of(first_window.data(), segments, g);
          const auto* window = reinterpret_cast<const std::uint16_t*>(bases(s)) + (g - first_window(s));
          tokens(w, t) = window[t];
          targets(w, t) = window[t + 1];
        });
  }
  token_view tokens() const { return tokens_; }
  token_view targets() const { return targets_; }

 private:
  /// A split as the kernel reads it: each segment with a window, its address and its first window.
  struct split_tokens {
    Kokkos::View<std::uintptr_t*, memory_space> bases;
    Kokkos::View<std::uint64_t*, memory_space> first_window;
    std::uint64_t windows = 0;
    Kokkos::View<std::uint16_t*, memory_space> copy;  ///< the tokens, where the device cannot read the host's
  };

  static split_tokens upload(const token_dataset& data, token_dataset::split part) {
    std::vector<token_segment> used;
    for (const token_segment& s : data.segments(part))
      if (s.size > std::size_t(data.context())) used.push_back(s);
    split_tokens out;
    out.bases = decltype(out.bases)("kamp::batch::bases", used.size());
    out.first_window = decltype(out.first_window)("kamp::batch::first_window", used.size() + 1);
    const auto bases = Kokkos::create_mirror_view(out.bases);
    const auto first = Kokkos::create_mirror_view(out.first_window);
    constexpr bool reads_host = Kokkos::SpaceAccessibility<ExecutionSpace, Kokkos::HostSpace>::accessible;
    std::size_t total = 0;
    for (const token_segment& s : used) total += s.size;
    if (!reads_host) out.copy = decltype(out.copy)("kamp::batch::corpus", total);
    std::size_t at = 0;
    first(0) = 0;
    for (std::size_t i = 0; i < used.size(); ++i) {
      const token_segment& s = used[i];
      if (reads_host) {
        bases(i) = reinterpret_cast<std::uintptr_t>(s.tokens);
      } else {
        const auto into = Kokkos::subview(out.copy, std::make_pair(at, at + s.size));
        Kokkos::deep_copy(
            into, Kokkos::View<const std::uint16_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(s.tokens, s.size));
        bases(i) = reinterpret_cast<std::uintptr_t>(into.data());
      }
      at += s.size;
      first(i + 1) = first(i) + (s.size - std::size_t(data.context()));
    }
    out.windows = first(used.size());
    Kokkos::deep_copy(out.bases, bases);
    Kokkos::deep_copy(out.first_window, first);
    return out;
  }

  split_tokens train_, validation_;
  Kokkos::View<int**, Kokkos::LayoutRight, memory_space> tokens_, targets_;
  ExecutionSpace space_;
  std::shared_ptr<const token_dataset::storage> owner_;  ///< keeps the mapped tokens the kernel reads
};

}  // namespace kamp

#endif
