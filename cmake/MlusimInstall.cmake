# `cmake --install` lays mlusim out like an SDK: headers, libraries, the CLI, the presets and a
# CMake package, so users build their own programs and kernels with find_package(mlusim).
include(CMakePackageConfigHelpers)

install(TARGETS mlusim_sim EXPORT mlusimTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/sim/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/mlusim/configs)
install(TARGETS mlusim RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

install(EXPORT mlusimTargets NAMESPACE mlusim:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mlusim)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/mlusimConfig.cmake.in
  ${PROJECT_BINARY_DIR}/mlusimConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mlusim)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/mlusimConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/mlusimConfig.cmake ${PROJECT_BINARY_DIR}/mlusimConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mlusim)
