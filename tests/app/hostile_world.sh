#!/usr/bin/env bash
# kamp-train, kamp-generate, kamp-inspect, kamp-plan and kamp-demo in a hostile world: outputs that cannot be written
# (/dev/full, a full or inode-less file system), paths that are no regular files (FIFOs, devices),
# empty option values, and runs that diverge. Each case must end with its message and its exit
# status (1 for what the run finds, CLI11's codes for options: 105 a refused value, 109 an
# unexpected argument), never a hang, a crash or a silent exit 0.
# Usage: hostile_world.sh KAMP_TRAIN KAMP_GENERATE SCRATCH_DIR (kamp-demo, kamp-plan and
# kamp-inspect are looked for beside kamp-train). The file-system cases mount tmpfs: only as
# root, else they are skipped.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/expect.sh"
train=$(readlink -f "$1") generate=$(readlink -f "$2") scratch=$(readlink -f "$3")/hostile-world
demo=$(dirname "$train")/kamp-demo plan=$(dirname "$train")/kamp-plan inspect=$(dirname "$train")/kamp-inspect
umount "$scratch/mnt" 2>/dev/null  # left mounted by a run that was killed
rm -rf "$scratch" && mkdir -p "$scratch" && cd "$scratch" || exit 1
export OMP_PROC_BIND=false
tiny=(--layers 1 --heads 2 --d-model 32 --mlp 64 --context 16 --batch 4 --steps 2 --eval-batches 1)
# into_full COMMAND...: COMMAND with its standard output on /dev/full (its stderr stays).
into_full() { "$@" >/dev/full; }
export -f into_full
ck() { mktemp -d "$scratch/ck-XXXXXX"; }  # a fresh checkpoint directory per run

"$train" "${tiny[@]}" --checkpoint-dir "$scratch/ck-setup" >/dev/null 2>&1 || { echo "FAILED: setup run"; exit 1; }
checkpoint=$scratch/ck-setup/step-00000002.h5

# 1. Every output a run promises is checked: /dev/full gives ENOSPC on each write.
ln -s /dev/full full.csv && ln -s /dev/full full.jsonl && ln -s /dev/full full.json
expect "--metrics CSV on a full disk" 1 "--metrics '.*full.csv': writing failed: No space left on device" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --metrics full.csv
expect "--metrics JSONL on a full disk" 1 "--metrics '.*full.jsonl': writing failed: No space left on device" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --metrics full.jsonl
expect "--summary on a full disk" 1 "--summary '.*full.json': writing failed: No space left on device" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --summary full.json
expect "kamp-train's standard output full" 1 "kamp-train: error: the standard output: writing failed: No space left" \
  bash -c 'into_full "$@"' _ "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --sample-every 1
expect "kamp-generate's text on a full disk" 1 "kamp-generate: error: the standard output: writing failed: No space" \
  bash -c 'into_full "$@"' _ "$generate" --checkpoint "$checkpoint" --tokens 5
if [ -x "$demo" ]; then  # not in every build (the sanitizer leg builds without it)
  expect "kamp-demo's standard output full" 1 "kamp-demo: error: the standard output: writing failed: No space left" \
    bash -c 'into_full "$@"' _ "$demo"
  fi
expect "kamp-plan's standard output full" 1 "kamp-plan: error: the standard output: writing failed: No space left" \
  bash -c 'into_full "$@"' _ "$plan"
expect "kamp-inspect's standard output full" 1 "kamp-inspect: error: the standard output: writing failed" \
  bash -c 'into_full "$@"' _ "$inspect" --json "$checkpoint"
expect "--help on a full disk" 1 "kamp-train: error: the standard output: writing failed" \
  bash -c 'into_full "$@"' _ "$train" --help
for program in "$plan" "$inspect" "$generate"; do
  expect "$(basename "$program") --help on a full disk" 1 "$(basename "$program"): error: the standard output: writing failed" \
    bash -c 'into_full "$@"' _ "$program" --help
done

# 2. Regular files only where files are meant, refused by what they are before they are opened.
mkfifo fifo
head -c 3000 /dev/urandom >binary.dat && printf 'text\0' >>binary.dat
mkdir -p corpus && mkfifo corpus/pipe && python3 -c "print('a line of text. ' * 300)" >corpus/text.txt
expect "--config a FIFO" 105 "--config: '.*fifo' is a FIFO \(named pipe\), not a config file" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --config fifo
expect "--config a character device" 105 "--config: '/dev/zero' is a character device, not a config file" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --config /dev/zero
expect "--config a missing file" 105 "--config: 'missing.toml' does not exist: give a TOML or JSON file" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --config missing.toml
expect "--data a FIFO" 1 "--data '.*fifo' is a FIFO \(named pipe\), not a text file" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --data fifo
expect "--data /dev/zero" 1 "--data '/dev/zero' is a character device, not a text file" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --data /dev/zero
expect "--data one binary file" 1 "--data '.*binary.dat' holds NUL bytes: it is a binary file, not text" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --data binary.dat
expect "--data a directory with a FIFO in it" 0 "data: .*corpus \(1 files\).*done: 2 steps" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --data corpus
expect "--resume a FIFO" 1 "checkpoint '.*fifo': it is a FIFO \(named pipe\), not a checkpoint file" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --resume fifo
expect "kamp-generate --checkpoint a FIFO" 1 "checkpoint '.*fifo': it is a FIFO" "$generate" --checkpoint fifo
for option in --data --resume --metrics --summary --checkpoint-dir --checkpoint-every --fp32-layers --steps --lr; do
  expect "kamp-train $option ''" 105 "$option: the value is empty: give one, or leave $option out" \
    "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" "$option" ''
done
expect "kamp-train --config ''" 105 "--config: the value is empty: name a TOML or JSON file" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --config ''
printf 'data = ""\n' >empty-data.toml
expect "an empty value in a config file" 105 "--data: the value is empty" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --config empty-data.toml
for option in --checkpoint --checkpoint-dir --seed --tokens --temperature; do
  expect "kamp-generate $option ''" 105 "$option: the value is empty: give one, or leave $option out" \
    "$generate" "$option" ''
done
expect "kamp-plan --batch ''" 105 "--batch: the value is empty" "$plan" --batch ''
expect "kamp-inspect ''" 105 "checkpoint: the value is empty" "$inspect" ''
expect "kamp-generate --prompt ''" 105 "--prompt: the prompt needs at least one byte" "$generate" --prompt ''

# 3. The same mistake, the same message and exit status in every program.
expect "kamp-train --seed -1" 105 "--seed: the seed is a whole number from 0 to 18446744073709551615 \(2\^64 - 1\), got -1" "$train" "${tiny[@]}" --seed -1
expect "kamp-generate --seed -1" 105 "--seed: the seed is a whole number from 0 to 18446744073709551615 \(2\^64 - 1\), got -1" "$generate" --seed -1
expect "kamp-train: an unknown option" 109 "not expected: --bogus" "$train" --bogus
expect "kamp-generate: an unknown option" 109 "not expected: --bogus" "$generate" --bogus

# 4. Messages say what happened: a run that diverges itself is no checkpoint's fault.
expect "a fresh run with --lr 1e30" 1 "turned non-finite in this run.*smaller --lr \(this run's peak is 1e\+30\)" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --mode amp_fp16 --lr 1e30 --steps 30
lacks "a fresh run with --lr 1e30 blames no checkpoint" "earlier checkpoint|saved state"

# Full and inode-less file systems (tmpfs: root only).
mnt=$scratch/mnt
mkdir -p "$mnt"
if [ "$(id -u)" -eq 0 ] && mount -t tmpfs -o size=8m,nr_inodes=4 tmpfs "$mnt" 2>/dev/null; then
  trap 'umount "$mnt" 2>/dev/null' EXIT
  mkdir "$mnt/ck" && touch "$mnt/a" "$mnt/b"
  expect "no inodes left" 1 "no free inodes \(0 of 4\) on the file system of checkpoint directory '.*mnt/ck' \([0-9.]+ MiB free\)" \
    "$train" "${tiny[@]}" --checkpoint-dir "$mnt/ck"
  lacks "no inodes left is not 'not writable'" "not writable"
  umount "$mnt"
  mount -t tmpfs -o size=64k tmpfs "$mnt"
  expect "no bytes left for a checkpoint" 1 "has 0.06 MiB free, a checkpoint of this model needs about [0-9.]+ MiB" \
    "$train" "${tiny[@]}" --checkpoint-dir "$mnt/ck"
  dd if=/dev/zero of="$mnt/fill" bs=4k 2>/dev/null
  expect "--metrics on a full file system" 1 "--metrics '.*mnt/m.csv': writing failed: No space left on device" \
    "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --metrics "$mnt/m.csv"
  expect "--summary on a full file system" 1 "--summary '.*mnt/s.json': writing failed: No space left on device" \
    "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --summary "$mnt/s.json"
  umount "$mnt"
  # Checkpoints fail loudly by themselves: room for the first ones only.
  mount -t tmpfs -o size=2200k tmpfs "$mnt"
  expect "disk full while checkpointing" 1 "kamp-train: error: .*(No space left|MiB free)" \
    "$train" "${tiny[@]}" --steps 40 --checkpoint-every 1 --keep-checkpoints 1000 --checkpoint-dir "$mnt/ck"
  umount "$mnt"
  trap - EXIT
else
  not_run "the full and inode-less file systems (tmpfs mounts need root)"
fi

expect_summary "hostile world"
