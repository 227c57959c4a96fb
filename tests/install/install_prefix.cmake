# cmake -DBUILD_DIR= -DPREFIX= -P install_prefix.cmake: a fresh install of the build, so that
# nothing a previous install left there can stand in for a file the package lacks.
file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD_DIR} --prefix ${PREFIX} failed (${rc})")
endif()
