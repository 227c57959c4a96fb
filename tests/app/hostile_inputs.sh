#!/usr/bin/env bash
# kamp-train and kamp-inspect against hostile input: each case must end with its clear message
# and a plain exit status (1; CLI11's 104/105 for bad options and config files) or the documented
# behaviour, never a crash (status >= 128) or a hang.
# Usage: hostile_inputs.sh KAMP_TRAIN KAMP_INSPECT SCRATCH_DIR
set -uo pipefail
train=$1 inspect=$2 scratch=$3/hostile-inputs
rm -rf "$scratch" && mkdir -p "$scratch"
tiny=(--layers 1 --heads 2 --d-model 32 --mlp 64 --context 16 --batch 4 --steps 2 --eval-batches 1)
source "$(dirname "${BASH_SOURCE[0]}")/expect.sh"
ck="$scratch/ck"
"$train" "${tiny[@]}" --checkpoint-dir "$ck" --checkpoint-every 1 >/dev/null 2>&1 || { echo "FAILED: setup run"; exit 1; }

# Config files: size, nesting, numbers out of range, duplicated keys, lists for one value.
printf '{"lr": 1e999}\n' >"$scratch/huge-number.json"
expect "JSON number out of range" 104 "number is out of range" "$train" --config "$scratch/huge-number.json"
python3 -c "print('[' + '.'.join(['a'] * 20000) + ']')" >"$scratch/deep.toml"
expect "TOML section 20000 levels deep" 104 "nested deeper than 8 levels" "$train" --config "$scratch/deep.toml"
python3 -c "print('{\"a\":' * 50 + '1' + '}' * 50)" >"$scratch/deep.json"
expect "JSON 50 levels deep" 104 "nested deeper than 8 levels" "$train" --config "$scratch/deep.json"
expect "config /dev/zero" 105 "'/dev/zero' is a character device, not a config file" "$train" --config /dev/zero
head -c 2097152 /dev/zero | tr '\0' a >"$scratch/big.toml"
expect "config of 2 MiB" 104 "larger than 1 MiB" "$train" --config "$scratch/big.toml"
printf 'steps = 3\nsteps = 4\n' >"$scratch/twice.toml"
expect "TOML key twice" 104 "key 'steps' appears twice" "$train" --config "$scratch/twice.toml"
printf '{"steps": 3, "steps": 4}\n' >"$scratch/twice.json"
expect "JSON key twice" 104 "key 'steps' appears twice" "$train" --config "$scratch/twice.json"
printf 'warmup = [1, 2]\n' >"$scratch/list.toml"
expect "a list for a one-value option" 104 "'warmup' takes one value, not a list of 2" "$train" --config "$scratch/list.toml"
expect "negative seed" 105 "the seed is a whole number from 0 to 18446744073709551615 \(2\^64 - 1\), got -1" "$train" "${tiny[@]}" --seed -1
# The enumerator's C++ name is no spelling: kamp::loss_scaling::fixed is --loss-scaling static.
expect "unknown loss scaling" 105 "--loss-scaling: unknown loss scaling 'fixed': expected dynamic, static or off" \
  "$train" "${tiny[@]}" --loss-scaling fixed

# Checkpoint paths that are not files.
expect "a directory as the checkpoint" 1 "is a directory, not a checkpoint file" "$inspect" "$ck"
mkfifo "$scratch/fifo"
expect "a FIFO as the checkpoint" 1 "is a FIFO" "$inspect" "$scratch/fifo"
expect "/dev/zero as the checkpoint" 1 "is a character device" "$train" "${tiny[@]}" --checkpoint-dir "$scratch/ck-z" --resume /dev/zero

# A stray file named like a checkpoint whose step overflows: reported and ignored.
cp -r "$ck" "$scratch/ck-stray"
: >"$scratch/ck-stray/step-99999999999999999999.h5"
expect "stray checkpoint name" 0 "step number does not fit a step counter: ignored.*resumed from .*step-00000002.h5" \
  "$train" "${tiny[@]}" --steps 3 --checkpoint-dir "$scratch/ck-stray" --resume auto

# Resuming from an older file retires the newer files of the abandoned branch.
cp -r "$ck" "$scratch/ck-branch"
expect "resume from an older checkpoint" 0 "retired '.*step-00000002.h5.abandoned'" \
  "$train" "${tiny[@]}" --steps 3 --checkpoint-dir "$scratch/ck-branch" --resume "$scratch/ck-branch/step-00000001.h5"
expect "then --resume auto continues the new branch" 0 "resumed from '.*step-00000003.h5'" \
  "$train" "${tiny[@]}" --steps 4 --checkpoint-dir "$scratch/ck-branch" --resume auto

# A new run with --steps 0 saves its initial state.
expect "--steps 0 writes the initial checkpoint" 0 "initial state is in .*step-00000000.h5" \
  "$train" "${tiny[@]}" --steps 0 --checkpoint-dir "$scratch/ck-init"

# Models larger than the memory there is: refused before anything is allocated.
expect "10^8 layers" 1 "needs .* GB .* but the .* has .* GB free" "$train" "${tiny[@]}" --layers 100000000
expect "a 1 TB model" 1 "needs .* GB .* but the .* has .* GB free" "$train" --d-model 65536 --heads 64 --mlp 262144 --layers 16

# kamp-inspect gives the verdict a resume gives.
expect "inspect a valid checkpoint" 0 '"valid": true' "$inspect" --json "$ck/step-00000002.h5"
if /usr/bin/python3 -c "import h5py" 2>/dev/null; then
  cp "$ck/step-00000002.h5" "$scratch/negative-step.h5"
  /usr/bin/python3 -c "import h5py, sys; h5py.File(sys.argv[1], 'r+').attrs['step'] = -1" "$scratch/negative-step.h5"
  expect "inspect: step -1" 1 'inconsistent counters.*"valid": false' "$inspect" --json "$scratch/negative-step.h5"
  cp "$ck/step-00000002.h5" "$scratch/nan-scale.h5"
  /usr/bin/python3 -c "import h5py, sys; h5py.File(sys.argv[1], 'r+')['loss_scaler'].attrs['scale'] = float('nan')" \
    "$scratch/nan-scale.h5"
  expect "inspect: NaN loss scale" 1 "impossible loss scaler state" "$inspect" "$scratch/nan-scale.h5"
  expect "resume: NaN loss scale" 1 "impossible loss scaler state" \
    "$train" "${tiny[@]}" --steps 3 --checkpoint-dir "$scratch/ck-nan" --resume "$scratch/nan-scale.h5"
  # A verified file lowered to format 1 (its digest and hashes deleted): refused unless asked for,
  # and then kamp-inspect says the version the file says.
  cp "$ck/step-00000002.h5" "$scratch/format1.h5"
  /usr/bin/python3 - "$scratch/format1.h5" <<'PY'
import h5py, sys
with h5py.File(sys.argv[1], "r+") as f:
    del f.attrs["digest"]
    f.attrs["format_version"] = 1
    f.visititems(lambda name, o: o.attrs.__delitem__("content_hash") if isinstance(o, h5py.Dataset) else None)
PY
  expect "inspect: format 1 refused" 1 "format-1 checkpoint: its tensors have no content hashes" \
    "$inspect" "$scratch/format1.h5"
  expect "inspect: format 1 read when asked, its version printed" 0 "kamp checkpoint format 1," \
    "$inspect" --accept-unhashed-checkpoint "$scratch/format1.h5"
  expect "inspect: format 4 printed" 0 "kamp checkpoint format 4," "$inspect" "$ck/step-00000002.h5"
  expect "resume: format 1 refused" 1 "format-1 checkpoint" \
    "$train" "${tiny[@]}" --steps 3 --checkpoint-dir "$scratch/ck-f1" --resume "$scratch/format1.h5"
  expect "resume: format 1 read when asked" 0 "resumed from .*format1.h5.*done: 3 steps" \
    "$train" "${tiny[@]}" --steps 3 --checkpoint-dir "$scratch/ck-f1" --resume "$scratch/format1.h5" \
    --accept-unhashed-checkpoint
else
  not_run "the edited-attribute cases (no h5py for Debian's python3; Debian: python3-h5py)"
fi

# A checkpoint directory that cannot hold a checkpoint is found before training: a read-only
# file system, a full one; and a disk that fills up during training ends with a clean error.
mnt="$scratch/mnt"
mkdir -p "$mnt"
if mount -t tmpfs -o size=64k tmpfs "$mnt" 2>/dev/null; then
  expect "checkpoint directory too small" 1 "MiB free, a checkpoint of this model needs about" \
    "$train" "${tiny[@]}" --checkpoint-dir "$mnt/ck"
  mount -o remount,ro "$mnt"
  expect "read-only checkpoint directory" 1 "cannot create checkpoint directory|is not writable" \
    "$train" "${tiny[@]}" --checkpoint-dir "$mnt/ck"
  umount "$mnt"
  # Room for the first checkpoints, not for all of them: the write that fails is a clean error.
  mount -t tmpfs -o size=2200k tmpfs "$mnt"
  expect "disk full while checkpointing" 1 "kamp-train: error: .*(No space left|space|write)" \
    "$train" "${tiny[@]}" --steps 40 --checkpoint-every 1 --keep-checkpoints 1000 --checkpoint-dir "$mnt/ck"
  newest=$(ls "$mnt/ck"/step-*.h5 | sort | tail -n 1)
  expect "the checkpoints written before stay valid" 0 "step" "$inspect" "$newest"
  umount "$mnt"
else
  not_run "the disk-full cases (no tmpfs mount here: they need root)"
fi
expect_summary "hostile inputs"
