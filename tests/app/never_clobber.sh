#!/usr/bin/env bash
# Every output of every kamp program against every input of the same run: named by the same
# path, through a symbolic link, through a hard link; planted links at the temporary names;
# devices, FIFOs and other users' files. Each refused case must exit non-zero with the rule's
# message and leave the input byte-identical (and a device or FIFO what it was).
# Usage: never_clobber.sh KAMP_TRAIN KAMP_INSPECT KAMP_BENCH SCRATCH_DIR
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/expect.sh"
train=$(readlink -f "$1") inspect=$(readlink -f "$2") bench=$(readlink -f "$3") scratch=$(readlink -f "$4")/never-clobber
rm -rf "$scratch" && mkdir -p "$scratch" && cd "$scratch" || exit 1
export OMP_PROC_BIND=false
tiny=(--layers 1 --heads 2 --d-model 32 --mlp 128 --context 16 --batch 4 --steps 2 --eval-batches 1)
ck() { mktemp -d "$scratch/ck-XXXXXX"; }

"$train" "${tiny[@]}" --checkpoint-dir setup >/dev/null 2>&1 || { echo "FAILED: setup run"; exit 1; }
checkpoint=$scratch/setup/step-00000002.h5
"$inspect" "$checkpoint" --export-llmc model.bin >/dev/null 2>&1 || { echo "FAILED: setup export"; exit 1; }
python3 -c "print('the quick brown fox jumps over the lazy dog. ' * 200)" >corpus.txt
printf 'steps = 2\n' >run.toml

# unchanged NAME FILE SUM: FILE still has the sha256 SUM.
unchanged() {
  if [ "$(sha256sum <"$2")" = "$3" ]; then passed=$((passed + 1)); else
    failed=$((failed + 1)) && echo "FAILED: $1: the input '$2' was changed"
  fi
}
# refused_over_input NAME INPUT_FILE COMMAND...: COMMAND (whose output is INPUT_FILE, its
# symbolic link or its hard link) is refused and INPUT_FILE is unchanged. (--metrics named like
# an input, model.bin, is refused by its name's format before the rule looks.)
refused_over_input() {
  local name=$1 input=$2 sum
  shift 2
  sum=$(sha256sum <"$input")
  expect "$name" 1 "is the same file as|is inside|the name must end in \.csv or \.jsonl" "$@"
  unchanged "$name" "$input" "$sum"
}

# 1. Each output of kamp-train against each input of its run, by three spellings of the path.
inputs=(--data corpus.txt --config run.toml --init-from-llmc model.bin --resume "$checkpoint")
for written in --metrics --summary; do
  for ((i = 0; i < ${#inputs[@]}; i += 2)); do
    option=${inputs[i]} file=${inputs[i + 1]}
    ln -sf "$file" link.csv && ln -f "$file" hard.csv
    extra=()
    [ "$option" = --resume ] || extra=(--checkpoint-dir "$(ck)")
    for spelling in "$file" link.csv hard.csv; do
      refused_over_input "kamp-train $written = $option ($spelling)" "$file" \
        "$train" "${tiny[@]}" "${extra[@]}" "$option" "$file" "$written" "$spelling"
    done
    rm -f link.csv hard.csv
  done
done
# --data a directory: an output inside it would be read back as data by the next run.
mkdir -p texts && cp corpus.txt texts/a.txt
expect "kamp-train --metrics inside the --data directory" 1 "--metrics '.*texts/m.csv' is inside --data" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --data texts --metrics texts/m.csv
[ ! -e texts/m.csv ] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAILED: texts/m.csv was created"; }
# Two outputs in one file: the summary would replace every per-step line.
expect "kamp-train --metrics = --summary" 1 "--summary 'both.json' is the same file as --metrics 'both.json'|--metrics 'both.json' is the same file as --summary" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --metrics both.json --summary both.json
# Refused before the run: no step is trained, no checkpoint written.
out_ck=$(ck)
expect "--summary in a missing directory, before training" 1 "--summary 'nodir/s.json' cannot be written: its directory 'nodir' does not exist" \
  "$train" "${tiny[@]}" --checkpoint-dir "$out_ck" --summary nodir/s.json
lacks "--summary in a missing directory trains nothing" "done:|step 1"

# 2. kamp-inspect --export-llmc against the checkpoint it reads.
cp "$checkpoint" read.h5 && ln -sf read.h5 read-link.bin && ln -f read.h5 read-hard.bin
for spelling in read.h5 read-link.bin read-hard.bin; do
  refused_over_input "kamp-inspect --export-llmc = the checkpoint ($spelling)" read.h5 \
    "$inspect" read.h5 --export-llmc "$spelling"
done
expect "the checkpoint still reads" 0 "kamp checkpoint format" "$inspect" read.h5

# 3. Devices and FIFOs are written into by streams, never replaced by documents.
mkfifo fifo
expect "--export-llmc a FIFO" 1 "--export-llmc 'fifo' is a FIFO \(named pipe\), not a regular file" \
  "$inspect" read.h5 --export-llmc fifo
[ -p fifo ] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAILED: the FIFO was replaced"; }
expect "--export-llmc /dev/null" 1 "--export-llmc '/dev/null' is a character device, not a regular file" \
  "$inspect" read.h5 --export-llmc /dev/null
[ -c /dev/null ] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAILED: /dev/null was replaced"; }
expect "kamp-bench --json /dev/null" 1 "--json '/dev/null' is a character device" "$bench" --suite gemm --json /dev/null
expect "--metrics a FIFO without a reader" 1 "--metrics 'fifo.csv' is a FIFO that no process reads" \
  bash -c 'mkfifo fifo.csv && exec "$@"' _ "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --metrics fifo.csv
expect "--summary /dev/null is written into" 0 "done: 2 steps" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --summary /dev/null
[ -c /dev/null ] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAILED: /dev/null was replaced"; }

# 4. Planted links at the names temporary files had, and at the outputs themselves.
echo "victim" >victim && victim_sum=$(sha256sum <victim)
ln -s "$scratch/victim" out.bin.tmp
expect "--export-llmc with a planted OUT.tmp link" 0 "wrote out.bin" "$inspect" read.h5 --export-llmc out.bin
unchanged "--export-llmc with a planted OUT.tmp link" victim "$victim_sum"
[ "$(od -An -tu4 -N4 out.bin | tr -d ' ')" = 20240326 ] && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAILED: out.bin is no llm.c model file"; }
planted=$(ck)
ln -s "$scratch/victim" "$planted/step-00000002.h5.tmp"
ln -s "$scratch/victim" "$planted/.kamp-write-probe"
expect "checkpoints with planted .tmp and probe links" 0 "done: 2 steps" \
  "$train" "${tiny[@]}" --checkpoint-dir "$planted" --overwrite-checkpoints
unchanged "checkpoints with planted .tmp and probe links" victim "$victim_sum"
expect "the checkpoint written past the planted link reads" 0 "step 2" "$inspect" "$planted/step-00000002.h5"
ln -s "$scratch/nowhere/x" dangling.csv
expect "--metrics a dangling link" 1 "--metrics 'dangling.csv' is a symbolic link to '.*nowhere/x', which does not exist" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --metrics dangling.csv
# Another user's file, reached through a link (as root: chown to nobody).
if [ "$(id -u)" -eq 0 ]; then
  echo "theirs" >theirs.csv && chown nobody theirs.csv && ln -s theirs.csv mine.csv
  theirs_sum=$(sha256sum <theirs.csv)
  expect "--metrics through a link into another user's file" 1 "--metrics 'mine.csv' belongs to another user \(uid [0-9]+\)" \
    "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --metrics mine.csv
  unchanged "another user's file" theirs.csv "$theirs_sum"
  expect "--export-llmc into another user's file" 1 "belongs to another user" "$inspect" read.h5 --export-llmc theirs.csv
  unchanged "another user's file" theirs.csv "$theirs_sum"
else
  not_run "the other user's file cases (chown needs root)"
fi

expect_summary "never clobber"
