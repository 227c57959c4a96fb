# A test that cannot run where it is (a tool or a CPU feature missing) exits with 77 after saying
# why (kamp::test::skip, `exit 77` in the scripts): CTest shows it as "Skipped", never as passed.
# A test whose tool is missing at configure time is still registered, as one that only says so,
# so that it is reported as skipped rather than absent; CI fails on either (tools/common.sh).
set(kamp_skip_code 77)
# kamp_skipped_test(<name> <label> <reason>)
function(kamp_skipped_test name label reason)
  add_test(NAME ${name} COMMAND sh -c "echo \"kamp test skipped: $0\"; exit ${kamp_skip_code}" "${reason}")
  set_tests_properties(${name} PROPERTIES LABELS ${label})
endfunction()
# kamp_tests_may_skip(): every test registered so far in the calling directory reports exit code 77
# as skipped. Each tests directory calls it last.
function(kamp_tests_may_skip)
  get_property(tests DIRECTORY PROPERTY TESTS)
  if(tests)
    set_tests_properties(${tests} PROPERTIES SKIP_RETURN_CODE ${kamp_skip_code})
  endif()
endfunction()
