#!/usr/bin/env bash
# Real models and token data through the programs: a checkpoint exported to llm.c's model file
# and imported again (bit for bit), token files (llm.c shards) with a vocabulary other than
# bytes, and the refusals of what does not fit.
#   models_and_tokens.sh KAMP-TRAIN KAMP-INSPECT KAMP-GENERATE WORK-DIR
train=$1 inspect=$2 generate=$3
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh" "$4/models_and_tokens"
gpt2_like=(--layers 1 --heads 2 --d-model 32 --mlp 128 --context 16 --batch 4 --eval-batches 1)

# Export, import, export again: the same file. The import's shape comes from the file.
"$train" "${gpt2_like[@]}" --mode fp32 --steps 4 --checkpoint-dir trained >/dev/null
"$inspect" trained/step-00000004.h5 --export-llmc trained.bin >/dev/null 2>&1
[ "$(od -An -tu4 -N8 trained.bin | tr -s ' ')" = " 20240326 3" ] || fail "no llm.c magic and version 3"
"$train" --init-from-llmc trained.bin --mode fp32 --batch 4 --steps 0 --checkpoint-dir imported >import.txt
grep -q "weights from the llm.c model trained.bin" import.txt || fail "the import was not reported"
"$inspect" imported/step-00000000.h5 --export-llmc imported.bin >/dev/null 2>&1
cmp -s trained.bin imported.bin || fail "exported, imported and exported again: the files differ"
"$inspect" trained/step-00000004.h5 --export-llmc trained-bf16.bin --llmc-dtype bf16 >/dev/null 2>&1
[ "$(od -An -tu4 -j4 -N4 trained-bf16.bin | tr -d ' ')" = 5 ] || fail "bf16 export is not version 5"
"$train" --init-from-llmc trained-bf16.bin --steps 2 --checkpoint-dir from-bf16 >/dev/null ||
  fail "training from a bf16 llm.c file failed"
# Its recorded settings (the file's shape among them) start the same run again.
"$inspect" imported/step-00000000.h5 --run-config >imported.toml
"$train" --config imported.toml --steps 1 --checkpoint-dir replayed >/dev/null || fail "the recorded settings were refused"
refused "which the model options given differ from" \
  "$train" --init-from-llmc trained.bin --layers 2 --steps 1 --checkpoint-dir other
refused "not llm.c's model magic" "$train" --init-from-llmc trained/step-00000004.h5 --checkpoint-dir other
"$train" "${tiny[@]}" --steps 1 --checkpoint-dir narrow >/dev/null
refused "4 x d_model = 128; this model's is 64" "$inspect" narrow/step-00000001.h5 --export-llmc narrow.bin
[ -z "$(ls narrow.bin* 2>/dev/null)" ] || fail "a refused export left a file: $(ls narrow.bin*)"

# llm.c token shards (perl: in every Debian), ids up to 299 (the first past 255: 37 x 7 = 259, at byte 1024 + 2 x 37), validation by file name.
shard() {  # shard FILE COUNT STEP: COUNT ids (i * STEP) mod 300 after llm.c's header
  perl -e 'my ($n, $s) = @ARGV; print pack("l<256", 20240520, 1, $n, (0) x 253);
           print pack("S<*", map { ($_ * $s) % 300 } 0 .. $n - 1)' "$2" "$3" >"$1"
}
mkdir tokens && shard tokens/demo_train_000001.bin 4000 7 && shard tokens/demo_val_000000.bin 600 11
"$train" "${gpt2_like[@]}" --vocab 300 --data tokens --steps 3 --checkpoint-dir tokens-run >tokens.txt
grep -q "vocab 300" tokens.txt || fail "the banner does not give the vocabulary"
grep -q "2 token files, llm.c shards; validation by file name) (4000 train / 600 validation tokens)" tokens.txt ||
  fail "the banner does not describe the token files"
# A preset's recorded settings hold the preset's shape, not the options' defaults (on token
# files: byte-level data has 256 tokens, not GPT-2's 50257).
"$train" --preset gpt2-124m --layers 1 --context 16 --d-model 64 --heads 1 --mlp 256 --batch 2 --steps 0 \
  --eval-batches 1 --data tokens --checkpoint-dir preset >/dev/null
"$inspect" preset/step-00000000.h5 --run-config >preset.toml
grep -q '^vocab=50257' preset.toml || fail "the preset's vocabulary is not in its recorded settings"
refused "token 259 at byte offset 1098 of 'tokens/demo_train_000001.bin' is outside the model's vocabulary \[0, 256\)" \
  "$train" "${gpt2_like[@]}" --data tokens --steps 1 --checkpoint-dir bytes-run
refused "no file matches the pattern" "$train" "${gpt2_like[@]}" --vocab 300 --data 'tokens/*_test_*.bin'
refused "needs a byte-level model" "$train" "${gpt2_like[@]}" --vocab 300 --data tokens --sample-every 1
refused "has 300 tokens and its run recorded no tokenizer: give --tokenizer FILE" "$generate" --checkpoint-dir tokens-run
"$inspect" --help | grep -q -- "--export-llmc" || fail "kamp-inspect --help lacks --export-llmc"
echo "models and tokens: all checks passed"
