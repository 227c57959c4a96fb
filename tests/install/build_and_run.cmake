# cmake -DPREFIX= -DSOURCE_DIR= -DWORK_DIR= -DGENERATOR= -DCXX_COMPILER= -DC_COMPILER= [-DFortran_COMPILER=] -DLAUNCHER= -DKokkos_DIR=
#       -DPROGRAMS=a|b -P build_and_run.cmake: a user's project against the installed kamp.
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
# The launcher through the environment (CMake's default for it): a list on the command line
# would be split into arguments.
string(REPLACE "|" ";" launcher "${LAUNCHER}")
set(ENV{CMAKE_CXX_COMPILER_LAUNCHER} "${launcher}")
string(REPLACE "|" ";" programs "${PROGRAMS}")
# The compilers kamp was built with (a Fortran module is read only by the compiler that wrote it).
set(compilers -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_C_COMPILER=${C_COMPILER})
if(Fortran_COMPILER)
  list(APPEND compilers -DCMAKE_Fortran_COMPILER=${Fortran_COMPILER})
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR} -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release ${compilers}
    -DCMAKE_PREFIX_PATH=${PREFIX} -DKokkos_DIR=${Kokkos_DIR})
run(${CMAKE_COMMAND} --build ${WORK_DIR})
foreach(program ${programs})
  run(${WORK_DIR}/${program})
endforeach()
