#!/usr/bin/env bash
# Round 3 of hostile inputs (outputs over inputs are never_clobber.sh's): inputs that would block,
# token files that are not what kamp reads, llm.c model files with damaged or extreme values,
# vocabularies that byte-level data cannot have, seeds out of range, config files with a
# byte-order mark or an array, symbolic link loops. Each case ends with its message and exit
# status, never a hang (60 s), a crash or a silent exit 0.
# Usage: hostile_world_3.sh KAMP_TRAIN KAMP_INSPECT KAMP_GENERATE SCRATCH_DIR
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/expect.sh"
train=$(readlink -f "$1") inspect=$(readlink -f "$2") generate=$(readlink -f "$3") scratch=$(readlink -f "$4")/hostile-world-3
rm -rf "$scratch" && mkdir -p "$scratch" && cd "$scratch" || exit 1
export OMP_PROC_BIND=false
tiny=(--layers 1 --heads 2 --d-model 32 --mlp 128 --context 16 --batch 4 --steps 2 --eval-batches 1)
ck() { mktemp -d "$scratch/ck-XXXXXX"; }
"$train" "${tiny[@]}" --checkpoint-dir setup >/dev/null 2>&1 || { echo "FAILED: setup run"; exit 1; }
"$inspect" setup/step-00000002.h5 --export-llmc model.bin >/dev/null 2>&1 || { echo "FAILED: setup export"; exit 1; }

# 1. Inputs that would block: every input path refuses a FIFO before open() can wait for a writer.
mkfifo fifo && ln -s fifo fifo-link
for path in fifo fifo-link; do
  expect "--init-from-llmc $path" 1 "llm.c model '$path' is a FIFO \(named pipe\), not an llm.c model file" \
    "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --init-from-llmc "$path"
done
expect "--tokenizer a FIFO" 1 "'fifo' is a FIFO \(named pipe\), not a SentencePiece model file|without SentencePiece" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --tokenizer fifo
mkdir -p shards && mkfifo shards/pipe.bin
expect "a FIFO named *.bin in --data" 1 "--data 'shards/pipe.bin' is a FIFO \(named pipe\), not a token file" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --data 'shards/*.bin'
ln -s loop-b loop-a && ln -s loop-a loop-b
expect "--data a symbolic link loop" 1 "'loop-a' is a loop of symbolic links" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --data loop-a
lacks "a link loop is not called missing" "does not exist"
expect "--config a symbolic link loop" 105 "'loop-a' is a loop of symbolic links" "$train" --config loop-a
expect "--init-from-llmc a symbolic link loop" 1 "'loop-a' is a loop of symbolic links" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --init-from-llmc loop-a

# 2. Token files are what their header says, or refused; raw uint16 only when asked for.
python3 - <<'PY'
import struct
ids = [(7 * i) % 200 for i in range(4000)]
def shard(name, magic, version, width=2, order="<", count=None):
    head = struct.pack(order + "256i", magic, version, len(ids) if count is None else count, *([0] * 253))
    body = struct.pack(order + str(len(ids)) + ("H" if width == 2 else "I"), *ids)
    open(name, "wb").write(head + body)
shard("good.bin", 20240520, 1)
shard("magic-off-by-one.bin", 20240521, 1)
shard("big-endian.bin", 20240520, 1, order=">")
shard("llama3.bin", 20240801, 7, width=4)
shard("eval.bin", 20240522, 1)
open("raw.bin", "wb").write(struct.pack("<4000H", *ids))
PY
expect "an llm.c shard" 0 "llm.c shards.*done: 2 steps" "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --data good.bin
expect "a shard whose magic is off by one" 1 "'magic-off-by-one.bin' begins with the int32 20240521, not llm.c's shard magic 20240520.*--token-format raw_uint16" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --data magic-off-by-one.bin
expect "a big-endian shard" 1 "'big-endian.bin' has llm.c's magic 20240520 in big-endian byte order" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --data big-endian.bin
expect "llm.c's llama-3 shard with --vocab 65536" 1 "'llama3.bin' is an llm.c llama-3 shard \(magic 20240801\): its token ids are uint32" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --data llama3.bin --vocab 65536
expect "llm.c's evaluation file" 1 "'eval.bin' is an llm.c evaluation file" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --data eval.bin
expect "raw uint16 ids without the request" 1 "'raw.bin' begins with the int32 .* not llm.c's shard magic.*--token-format raw_uint16" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --data raw.bin
expect "raw uint16 ids on request" 0 "raw uint16.*done: 2 steps" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --data raw.bin --token-format raw_uint16
expect "an llm.c shard read as raw on request" 1 "'good.bin' begins with llm.c's magic 20240520, but --token-format raw_uint16 would read its header as tokens" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --data good.bin --token-format raw_uint16
expect "an unknown token format" 105 "token file format 'u16'" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --data raw.bin --token-format u16

# 3. llm.c model files: a NaN is damage (not divergence); extreme finite weights give the true loss.
python3 - <<'PY'
import struct
data = bytearray(open("model.bin", "rb").read())
head = struct.unpack("<256i", bytes(data[:1024]))
vocab_rows, channels = head[7], head[6]
nan = bytearray(data); nan[1024 + 4 * 10:1024 + 4 * 11] = struct.pack("<f", float("nan"))
open("nan.bin", "wb").write(nan)
huge = bytearray(data); huge[1024:1024 + 4 * vocab_rows * channels] = struct.pack("<f", 1e30) * (vocab_rows * channels)
open("huge-wte.bin", "wb").write(huge)
PY
expect "an llm.c file with a NaN" 1 "llm.c model 'nan.bin': wte element 10 is nan: llm.c model files hold finite weights" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --init-from-llmc nan.bin
lacks "a NaN in a file is no divergence" "diverged|earlier checkpoint"
# wte = 1e30 everywhere: every logit is equal, so the loss is exactly log(256) = 5.5452, not 0.
# The gradients through such weights overflow: an fp32 run then stops with fp32's advice.
for mode in amp_bf16 fp32; do
  expect "wte = 1e30 in $mode: the loss is log(256)" "0|1" "step [01]/2 loss 5\.5452" \
    "$train" --mode "$mode" --batch 4 --steps 2 --eval-batches 1 --checkpoint-dir "$(ck)" --init-from-llmc huge-wte.bin
  lacks "wte = 1e30 in $mode: no loss of 0" "loss 0\.0000"
  lacks "wte = 1e30 in $mode: no advice for another mode" "Try --mode amp_bf16 or fp32"
done
expect "wte = 1e30 in fp32: fp32's advice" 1 "inf/NaN gradients.*The run is in fp32 already" \
  "$train" --mode fp32 --batch 4 --steps 2 --eval-batches 1 --checkpoint-dir "$(ck)" --init-from-llmc huge-wte.bin

# 4. Byte-level data has 256 tokens: another vocabulary needs a tokenizer or token files.
python3 -c "print('plain text for bytes. ' * 300)" >text.txt
expect "--vocab 1000 on text without a tokenizer" 1 "--data 'text.txt' is text read as bytes \(256 tokens\), but the model's vocabulary is 1000: give --tokenizer" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --data text.txt --vocab 1000
expect "--vocab 1000 on the built-in corpus" 1 "the built-in corpus\) is text read as bytes" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --vocab 1000

# 5. Seeds: 0 .. 2^64 - 1, nothing saturated.
for value in 18446744073709551616 99999999999999999999999 -1 1e3 0x10; do
  expect "kamp-train --seed $value" 105 "--seed: the seed is a whole number from 0 to 18446744073709551615" \
    "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --seed "$value"
  expect "kamp-generate --seed $value" 105 "--seed: the seed is a whole number from 0 to 18446744073709551615" \
    "$generate" --checkpoint-dir setup --seed "$value"
done
printf 'seed = 18446744073709551616\n' >seed.toml
expect "seed 2^64 in a config file" 105 "the seed is a whole number" "$train" "${tiny[@]}" --config seed.toml
expect "kamp-generate --seed 2^64 - 1" 0 "seed 18446744073709551615" \
  "$generate" --checkpoint-dir setup --seed 18446744073709551615 --tokens 3

# 6. Config files: a UTF-8 byte-order mark is read past; an array is named as one.
unstepped=("${tiny[@]:0:12}" --eval-batches 1)  # tiny without its --steps: the file gives them
printf '\xef\xbb\xbfsteps = 3\n' >bom.toml
expect "a config with a byte-order mark" 0 "done: 3 steps" "$train" "${unstepped[@]}" --checkpoint-dir "$(ck)" --config bom.toml
printf '\xef\xbb\xbf{"steps": 3}\n' >bom.json
expect "a JSON config with a byte-order mark" 0 "done: 3 steps" \
  "$train" "${unstepped[@]}" --checkpoint-dir "$(ck)" --config bom.json
printf '[{"steps": 3}]\n' >array.json
expect "a JSON array as the config" 104 "config file: a JSON array; kamp's config is one JSON object" \
  "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --config array.json
lacks "a JSON array is not called INI" "INI"
printf '\xff\xfes\x00=\x003\x00\n\x00' >utf16.toml
expect "a UTF-16 config" 104 "UTF-16 text" "$train" "${tiny[@]}" --checkpoint-dir "$(ck)" --config utf16.toml

expect_summary "hostile world 3"
