#ifndef KAMP_MODEL_TRAINING_DEVICE_BATCHES_HPP
#define KAMP_MODEL_TRAINING_DEVICE_BATCHES_HPP

#include <kamp/model/training/data.hpp>
#include <kamp/numeric/counter_random.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>

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

}  // namespace detail

/// \brief A token_dataset on the device: the corpus is copied once, and each batch is cut from
/// it by a kernel, so a training step moves no tokens between host and device. Batch `index`
/// holds the same windows as token_dataset::sample's.
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
class device_batches {
 public:
  using memory_space = typename ExecutionSpace::memory_space;
  using token_view = Kokkos::View<const int**, Kokkos::LayoutRight, memory_space>;

  /// Batches of `batch` windows of data.context() tokens; byte tokens fit every vocabulary
  /// (gpt_config requires at least 256).
  device_batches(const token_dataset& data, int batch, const ExecutionSpace& space = ExecutionSpace())
      : train_(upload(data, token_dataset::split::train)),
        validation_(upload(data, token_dataset::split::validation)),
        tokens_("kamp::batch::tokens", batch, data.context()),
        targets_("kamp::batch::targets", batch, data.context()),
        space_(space) {}

  /// Cuts batch `index` of `part` (seed as for token_dataset::sample) into tokens()/targets().
  void sample(token_dataset::split part, std::uint64_t seed, std::uint64_t index) const {
    const bool train = part == token_dataset::split::train;
    const auto bytes = train ? train_ : validation_;
    const auto tokens = tokens_;
    const auto targets = targets_;
    const int batch = int(tokens_.extent(0)), context = int(tokens_.extent(1));
    const std::uint64_t stream = detail::split_stream(seed, train), windows = bytes.extent(0) - context;
    Kokkos::parallel_for(
        "kamp::batch::sample", Kokkos::MDRangePolicy<ExecutionSpace, Kokkos::Rank<2>>(space_, {0, 0}, {batch, context}),
        KOKKOS_LAMBDA(int w, int t) {
          const std::size_t start = detail::window_start(stream, index, batch, w, windows);
          tokens(w, t) = bytes(start + t);
          targets(w, t) = bytes(start + t + 1);
        });
  }
  token_view tokens() const { return tokens_; }
  token_view targets() const { return targets_; }

 private:
  static Kokkos::View<std::uint8_t*, memory_space> upload(const token_dataset& data, token_dataset::split part) {
    const auto& host = data.bytes(part);
    Kokkos::View<std::uint8_t*, memory_space> out("kamp::batch::corpus", host.size());
    Kokkos::deep_copy(
        out, Kokkos::View<const std::uint8_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(host.data(), host.size()));
    return out;
  }

  Kokkos::View<std::uint8_t*, memory_space> train_, validation_;
  Kokkos::View<int**, Kokkos::LayoutRight, memory_space> tokens_, targets_;
  ExecutionSpace space_;
};

}  // namespace kamp

#endif
