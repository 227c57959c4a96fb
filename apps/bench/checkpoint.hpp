#ifndef KAMP_APPS_BENCH_CHECKPOINT_HPP
#define KAMP_APPS_BENCH_CHECKPOINT_HPP

#include "report.hpp"

#include <string>

namespace kamp::bench {

/// Size, write time (atomic: write, fsync, rename, directory fsync) and read time (every
/// checksum checked) of the reference GPT's checkpoint in every precision mode, as ratios to
/// writing the same bytes raw (fwrite + fsync) and reading them back (fread), alternated in the
/// same run. Files go to `directory` (on the file system the checkpoints will use).
void checkpoints(report& out, int repeat, const std::string& directory);

}  // namespace kamp::bench

#endif
