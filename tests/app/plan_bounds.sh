#!/usr/bin/env bash
# kamp-plan is bounded by its input: shapes of 10^6 or 10^7 layers (which once took a minute and
# gigabytes) are planned from the shape at once, and NaN, infinities, zero, negatives and shapes
# beyond its bounds are refused at once with the option and the fix: exit 105 (CLI11's
# ValidationError) for a bad option value, 1 for a shape refused after parsing, never a crash
# (status >= 128), a hang, or a figure printed as inf or nan.
# Usage: plan_bounds.sh KAMP_PLAN SCRATCH_DIR
set -uo pipefail
plan=$1 scratch=$2/plan-bounds
rm -rf "$scratch" && mkdir -p "$scratch"
passed=0 failed=0
# Every case runs in 2 GiB of address space, unless the build needs more only to start (a
# sanitizer reserves terabytes of it), and 10 s at most.
limit_kib=2097152
if ! (ulimit -v "$limit_kib" && "$plan" --help) >/dev/null 2>&1; then
  echo "note: $plan does not start in $limit_kib KiB of address space; cases run without that limit"
  limit_kib=unlimited
fi
# expect NAME STATUS REGEX ARGS...: runs kamp-plan ARGS; its exit status must match STATUS (a
# regex: 0|104 where CLI11 versions differ) and its output REGEX.
expect() {
  local name=$1 want=$2 regex=$3
  shift 3
  local out rc why=
  out=$( (ulimit -v "$limit_kib" && exec timeout 10 "$plan" "$@") 2>&1 </dev/null)
  rc=$?
  if [ "$rc" = 124 ]; then
    why="still running after 10 s"
  elif ! [[ $rc =~ ^($want)$ ]] || ! [[ $out =~ $regex ]]; then
    why="exit $rc (want $want), want /$regex/"
  elif [ "$rc" = 0 ] && [[ $out =~ (^|[^a-z])(inf|nan)([^a-z]|$) ]]; then
    why="a figure printed as inf or nan"
  fi
  if [ -z "$why" ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    printf 'FAILED: %s: %s; output:\n%s\n' "$name" "$why" "$out"
  fi
}

# Plans that still print their table and their JSON.
expect "the reference model" 0 "kamp-plan: 3.258e\+06 parameters, mode amp_bf16.*activations .*total +18 "
expect "the reference model as JSON" 0 '"one_rank_of_all": \{.*"parameters": 3257856(\.0)?,' --json
expect "70e9 parameters over 16 shards" 0 "parameters +2 +140 GB +8.75 GB" \
  --parameters 70e9 --mode pure_bf16 --shards 16 --sharding parameters
expect "the largest parameter count" 0 "1e\+15 parameters.*total +18 +18.0 PB" --parameters 1e15

# Shapes of many layers: planned from the shape, in time and memory that do not grow with them.
expect "10^6 layers" 0 "7.898e\+11 parameters.*total +18 +43.6 TB" --layers 1000000
expect "10^7 layers" 0 "7.898e\+12 parameters.*total +18 +436 TB" --layers 10000000
expect "10^7 layers as JSON" 0 '"parameters": 7897600098816(\.0)?,' --layers 10000000 --json
expect "10^8 layers sharded, the last one's MLP in fp32" 0 "7.898e\+13 parameters.*per rank" \
  --layers 100000000 --fp32-layers h99999999.mlp --shards 64 --sharding parameters
# CLI11 2.1 reads no exponent into an integer option; newer versions read 1e6 as 1000000.
expect "--layers 1e6" "0|104" "7.898e\+11 parameters|Could not convert: --layers = 1e6" --layers 1e6
expect "--layers 1e7" "0|104" "7.898e\+12 parameters|Could not convert: --layers = 1e7" --layers 1e7

# Shapes beyond the bounds, and shapes kamp-train refuses: refused after parsing.
expect "2^31 - 1 layers" 1 "this shape has 1.69[0-9]*e\+15 parameters, more than the 1e\+15 kamp-plan plans: use fewer --layers" \
  --layers 2147483647
expect "a context of 2^31 - 1" 1 "activations are .* bytes, more than the 1e\+18 kamp-plan plans in all: use a smaller --batch or --context" \
  --context 2147483647
expect "an override past the last of 10^8 layers" 1 "fp32 override 'h100000000.mlp' names no layer" \
  --layers 100000000 --fp32-layers h100000000.mlp
expect "-3 layers" 1 "model config: layers is -3; it must be at least 1" --layers -3
expect "d_model not a multiple of heads" 1 "d_model 30 is not a positive multiple of heads 4" --d-model 30 --heads 4

# Parameter counts that are no count.
expect "--parameters nan" 105 "--parameters: nan is not a number: give a parameter count such as 70e9" --parameters nan
expect "--parameters inf" 105 "--parameters: inf is not a finite number: give a parameter count" --parameters inf
expect "--parameters -inf" 105 "--parameters: -inf is not a finite number" --parameters -inf
expect "--parameters -1" 105 "--parameters: -1 is not a positive count: give a parameter count" --parameters -1
expect "--parameters 0" 105 "--parameters: 0 is not a positive count" --parameters 0
expect "--parameters 1e308" 105 "--parameters: 1e308 is more than the 1e\+15 parameters kamp-plan plans" \
  --parameters 1e308
expect "--parameters 70B" 105 "--parameters: 70B is not a number" --parameters 70B

# Batches and shard counts outside 1 ... 2^31 - 1.
expect "--batch 0" 105 "--batch: 0 is not a number of sequences: give a whole number from 1 to 2147483647" --batch 0
expect "--batch nan" 105 "--batch: nan is not a number of sequences" --batch nan
expect "--batch 2^31" 105 "--batch: 2147483648 is not a number of sequences" --batch 2147483648
expect "--shards -1" 105 "--shards: -1 is not a number of ranks: give a whole number from 1 to 2147483647" --shards -1
expect "--shards 2.5" 105 "--shards: 2.5 is not a number of ranks" --shards 2.5
expect "the largest batch and shard count" 0 "2147483647 shards.*total" --batch 2147483647 --shards 2147483647 \
  --layers 1 --context 1

if [ "$failed" -gt 0 ]; then
  echo "plan bounds: $failed of $((passed + failed)) checks failed"
  exit 1
fi
echo "plan bounds: all $passed checks passed"
