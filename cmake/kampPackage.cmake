# Install headers and targets and export kamp as a CMake package: find_package(kamp) -> kamp::kernels.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KAMP_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/kamp)
install(EXPORT kampTargets NAMESPACE kamp:: DESTINATION ${KAMP_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kampConfig.cmake.in
  ${PROJECT_BINARY_DIR}/kampConfig.cmake INSTALL_DESTINATION ${KAMP_INSTALL_CMAKEDIR})
# Not write_basic_package_version_file: SameMajorVersion would let 0.1 code take a 0.3 that removed
# what 0.2 deprecated. kampConfigVersion.cmake.in says which requests a version serves.
configure_file(${PROJECT_SOURCE_DIR}/cmake/kampConfigVersion.cmake.in ${PROJECT_BINARY_DIR}/kampConfigVersion.cmake
  @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/kampConfig.cmake ${PROJECT_BINARY_DIR}/kampConfigVersion.cmake
  DESTINATION ${KAMP_INSTALL_CMAKEDIR})
