# Sourced by the tests that kill a training run: what must hold after each kill.
# newest_after_kill INSPECT DIR TRIAL PREVIOUS: every step-*.h5 in DIR loads completely
# (kamp-inspect checks all of it) and the newest step is not below PREVIOUS; prints that step.
newest_after_kill() {
  local inspect=$1 dir=$2 trial=$3 previous=$4 file latest step
  for file in "$dir"/step-*.h5; do
    "$inspect" "$file" > /dev/null || { echo "FAIL: trial $trial: $file does not load after the kill" >&2; exit 1; }
  done
  latest=$(ls "$dir"/step-*.h5 | sort | tail -1)
  step=$(basename "$latest" .h5)
  step=$((10#${step#step-}))
  if [ "$step" -lt "$previous" ]; then
    echo "FAIL: trial $trial: newest checkpoint went back from step $previous to $step" >&2
    exit 1
  fi
  echo "$step"
}
