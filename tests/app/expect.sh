# Sourced by the hostile-input scripts: checks of a command's exit status and output, counted.
#   expect NAME STATUS REGEX COMMAND...: runs COMMAND (60 s at most, stdin closed); its exit
#     status must be STATUS (an extended regex, e.g. 1 or 0|104) and its output (stdout and stderr)
#     match REGEX. The output stays in $output for `lacks`.
#   lacks NAME REGEX: the output of the last expect must not match REGEX.
#   not_run REASON: a group of checks cannot run here (a tool or root missing); says why.
#   expect_summary TITLE: prints the tally; its status is the script's verdict: 1 if a check
#     failed, else 77 (CTest: skipped) if a group did not run, else 0.
passed=0 failed=0 output= not_run_reasons=()
expect() {
  local name=$1 want=$2 regex=$3 rc
  shift 3
  output=$(timeout 60 "$@" 2>&1 </dev/null)
  rc=$?
  if [[ $rc =~ ^($want)$ ]] && [[ $output =~ $regex ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    printf 'FAILED: %s: exit %s (want %s), output:\n%s\n(want /%s/)\n' "$name" "$rc" "$want" "$output" "$regex"
  fi
}
lacks() {
  if [[ $output =~ $2 ]]; then
    failed=$((failed + 1))
    printf 'FAILED: %s: the output says /%s/:\n%s\n' "$1" "$2" "$output"
  else
    passed=$((passed + 1))
  fi
}
not_run() {
  not_run_reasons+=("$1")
  echo "not run: $1"
}
expect_summary() {
  if [ "$failed" -gt 0 ]; then
    echo "$1: $failed of $((passed + failed)) checks failed"
    return 1
  fi
  if [ ${#not_run_reasons[@]} -gt 0 ]; then
    printf 'kamp test skipped: %s: %s checks passed, but these did not run: %s\n' "$1" "$passed" "${not_run_reasons[*]}"
    return 77
  fi
  echo "$1: all $passed checks passed"
}
