#!/usr/bin/env bash
# SentencePiece through the programs: spm_train makes a tokenizer of a small text, kamp-train
# trains on its ids (the vocabulary its pieces), the checkpoint's settings record the file and
# its digest, kamp-generate encodes the prompt and decodes the drawn ids with it, and another
# file is refused.
#   tokenizer.sh KAMP-TRAIN KAMP-GENERATE KAMP-INSPECT SPM_TRAIN WORK-DIR
train=$1 generate=$2 inspect=$3 spm_train=$4
source "$(dirname "${BASH_SOURCE[0]}")/cli_checks.sh" "$5/tokenizer"
model=(--layers 1 --heads 2 --d-model 32 --mlp 128 --context 16 --batch 4 --eval-batches 1)

# Sentences of a small vocabulary of words (perl: in every Debian).
perl -e 'srand(7); my @w = qw(the model rounds every value in bfloat16 and half precision keeps its range
  a loss scale lifts small gradients master weights stay in float);
  for (1 .. 4000) { print join(" ", map { $w[rand @w] } 1 .. 5 + int(rand 8)), ".\n" }' >text.txt
for n in 200 150; do
  "$spm_train" --input=text.txt --model_prefix=pieces$n --vocab_size=$n --model_type=bpe \
    --character_coverage=1.0 >spm$n.log 2>&1 || { cat spm$n.log >&2; fail "spm_train --vocab_size=$n failed"; }
done

"$train" "${model[@]}" --steps 3 --data text.txt --tokenizer pieces200.model --checkpoint-dir run >train.txt
grep -q "vocab 200:" train.txt || fail "the vocabulary is not the tokenizer's 200 pieces"
grep -q "SentencePiece pieces200.model (" train.txt || fail "the banner does not name the tokenizer"
"$inspect" run/step-00000003.h5 --run-config >run.toml
grep -q '^tokenizer="pieces200.model"' run.toml || fail "the run's settings do not record the tokenizer"
grep -q "^tokenizer-digest=\"$(printf 'fnv1a64:%s' '[0-9a-f]\{16\}')\"" run.toml ||
  fail "the run's settings do not record the tokenizer's digest"

"$generate" --checkpoint-dir run --prompt "the model" --tokens 12 --seed 3 >a.txt 2>gen.txt
[ "$(head -c 9 a.txt)" = "the model" ] || fail "the text does not start with the prompt"
[ "$(stat -c %s a.txt)" -gt 11 ] || fail "no decoded text after the prompt"
grep -Eq '^[a-z0-9 .]+$' a.txt || fail "the decoded text holds what the corpus does not: $(cat a.txt)"
"$generate" --checkpoint-dir run --prompt "the model" --tokens 12 --seed 3 >b.txt 2>/dev/null
cmp -s a.txt b.txt || fail "the same seed gave different text"

# Vocabulary and tokenizer agree at the start, so that every id the model draws decodes.
refused "vocab 300, but --tokenizer 'pieces150.model' has 150 pieces: .*give --vocab 150 or leave --vocab out" \
  "$train" "${model[@]}" --data text.txt --tokenizer pieces150.model --vocab 300 --checkpoint-dir larger
"$train" --preset gpt2-124m "${model[@]}" --steps 2 --data text.txt --tokenizer pieces150.model \
  --checkpoint-dir preset >preset.txt || fail "a preset with a small tokenizer did not train"
grep -q "vocab 150:" preset.txt || fail "a preset's vocabulary was not replaced by the tokenizer's 150 pieces"
"$generate" --checkpoint-dir preset --prompt "the model" --tokens 40 --seed 1 >preset-text.txt 2>&1 ||
  fail "kamp-generate failed on a preset run with a small tokenizer: $(cat preset-text.txt)"
"$train" "${model[@]}" --steps 1 --data text.txt --checkpoint-dir bytes >/dev/null || fail "the byte-level run failed"
refused "the model is byte-level .*leave --tokenizer out" "$generate" --checkpoint-dir bytes --tokenizer pieces200.model
# A path with a quote is recorded so that it reads back.
cp pieces200.model 'we"ird.model'
"$train" "${model[@]}" --steps 1 --data text.txt --tokenizer 'we"ird.model' --checkpoint-dir quoted >/dev/null ||
  fail "a tokenizer path with a quote did not train"
"$generate" --checkpoint-dir quoted --prompt "the" --tokens 4 >/dev/null 2>quoted.txt ||
  fail "kamp-generate could not reopen the recorded tokenizer path with a quote: $(cat quoted.txt)"
# An output over the tokenizer is refused, and the tokenizer is left as it was.
sum=$(sha256sum <pieces150.model)
refused "summary 'pieces150.model' is the same file as --tokenizer" \
  "$train" "${model[@]}" --steps 1 --data text.txt --tokenizer pieces150.model --summary pieces150.model \
  --checkpoint-dir clobber
[ "$(sha256sum <pieces150.model)" = "$sum" ] || fail "--summary overwrote the tokenizer"

# The run's recorded settings build the same model again (the vocabulary resolved, not the default).
"$train" --config run.toml --steps 4 --resume auto >resume.txt || fail "the recorded settings did not resume the run"
[ -e run/step-00000004.h5 ] || fail "the resumed run wrote no step 4"
refused "is not the tokenizer the run trained with" "$generate" --checkpoint-dir run --tokenizer pieces150.model
cp pieces150.model pieces200.model
refused "the run trained with another file" "$train" --config run.toml --checkpoint-dir again
refused "vocab 100, but --tokenizer 'pieces150.model' has 150 pieces" \
  "$train" "${model[@]}" --data text.txt --tokenizer pieces150.model --vocab 100 --checkpoint-dir small
refused "names token files, which hold ids already" \
  "$train" "${model[@]}" --data shards.bin --tokenizer pieces150.model --checkpoint-dir bin
refused "is not a SentencePiece model" "$train" "${model[@]}" --data text.txt --tokenizer text.txt --checkpoint-dir bad
echo "tokenizer: all checks passed"
