# `cmake --install` installs libattnprof, its public headers, the attnprof binary and a package
# config, so `find_package(attnprof)` + `target_link_libraries(app attnprof::attnprof)` work.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The installed targets are built with their install RUNPATH (no chrpath at install, so no padded
# RUNPATH with an empty entry: see the top CMakeLists.txt). The build tree mirrors the install
# tree so the same RUNPATH holds in both: build/<preset>/bin/attnprof finds
# build/<preset>/lib/libattnprof.so through $ORIGIN/../lib; libattnprof.so keeps the absolute
# directories of the libraries it links from outside the system paths (the CUDA toolkit's).
# build/<preset>/attnprof is a link to bin/attnprof (src/cli/CMakeLists.txt).
set_target_properties(attnprof PROPERTIES
  LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/${CMAKE_INSTALL_LIBDIR}
  ARCHIVE_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/${CMAKE_INSTALL_LIBDIR}
  BUILD_WITH_INSTALL_RPATH ON INSTALL_RPATH_USE_LINK_PATH ON)
set_target_properties(attnprof_cli PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/${CMAKE_INSTALL_BINDIR}
  BUILD_WITH_INSTALL_RPATH ON INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}" INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS attnprof EXPORT attnprofTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS attnprof_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The CUDA backend module, beside libattnprof (which opens it from its own directory on first
# need); no target is exported for it: programs reach it through libattnprof.
if(TARGET attnprof_cuda)
  install(TARGETS attnprof_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(DIRECTORY include/attnprof DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT attnprofTargets NAMESPACE attnprof:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/attnprof)

configure_package_config_file(cmake/attnprofConfig.cmake.in ${PROJECT_BINARY_DIR}/attnprofConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/attnprof)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/attnprofConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/attnprofConfig.cmake ${PROJECT_BINARY_DIR}/attnprofConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/attnprof)
