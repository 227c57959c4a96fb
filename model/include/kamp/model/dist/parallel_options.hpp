#ifndef KAMP_MODEL_DIST_PARALLEL_OPTIONS_HPP
#define KAMP_MODEL_DIST_PARALLEL_OPTIONS_HPP

#include <kamp/model/config/sharding.hpp>
#include <kamp/model/dist/communicator.hpp>
#include <kamp/numeric/dtype.hpp>

namespace kamp {

/// \brief How a data-parallel run divides the work; the defaults are one process.
///
/// Each rank computes the gradients of its own micro-batches and owns one contiguous shard of
/// the flat buffers, whose fp32 master weights and optimizer moments it alone updates. What
/// else is sharded is the `level` (docs/distributed.md):
/// - optimizer (ZeRO-1): every rank holds the whole model copy and gradient buffer; after the
///   backward pass the gradients are reduce-scattered, after the update the copy all-gathered.
/// - gradients (ZeRO-2): the same weights, but each unit's gradients (the root, each block) are
///   reduce-scattered as soon as its backward pass is done, from a buffer of that unit only.
/// - parameters (ZeRO-3, FSDP full shard): each rank keeps only its shard of the model copy
///   too; each unit's weights are all-gathered just before its forward pass (and again before
///   its backward pass, unless `reshard_after_forward` is false) and dropped after.
/// Collectives of the two sharded levels are non-blocking: the next unit's gather starts before
/// this unit computes. A run on N ranks with `batch` B per rank takes the same data and the same
/// steps as one process with batch N x B.
struct parallel_options {
  dist::communicator ranks;                ///< the ranks that train this model together
  dtype gradient_reduction = dtype::fp32;  ///< the gradients' type on the network: fp32 or bf16
  sharding level = sharding::optimizer;    ///< optimizer, gradients or parameters
  /// parameters: gather each block again for the backward pass (FSDP FULL_SHARD); false keeps
  /// the blocks gathered from the forward pass (SHARD_GRAD_OP: more memory, half the gathers).
  bool reshard_after_forward = true;
};

}  // namespace kamp

#endif
