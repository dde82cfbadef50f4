# `cmake --install` installs libattnprof, its public headers, the attnprof binary and a package
# config, so `find_package(attnprof)` + `target_link_libraries(app attnprof::attnprof)` work.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set_target_properties(attnprof_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
install(TARGETS attnprof EXPORT attnprofTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS attnprof_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/attnprof DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT attnprofTargets NAMESPACE attnprof:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/attnprof)

configure_package_config_file(cmake/attnprofConfig.cmake.in ${PROJECT_BINARY_DIR}/attnprofConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/attnprof)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/attnprofConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/attnprofConfig.cmake ${PROJECT_BINARY_DIR}/attnprofConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/attnprof)
