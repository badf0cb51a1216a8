# `cmake --install build --prefix P`: the runtime, the SDK and the CLI, laid out
# as the build tree is (core/internal/hetrt/base/install_layout.h), so that an
# installed hetrt finds its plugins, kernels and headers relative to itself:
#   P/bin/hetrt                       CLI (RPATH $ORIGIN/../lib)
#   P/lib/libhetrt_core.so            runtime; libhetrt_toolchain.so beside it
#   P/lib/hetrt-plugins/              in-tree plugins
#   P/lib/hetrt/kernels/              kernel objects the exporter links
#   P/include/hetrt/                  public headers (plugin ABI, C++ API, sdk/ helpers; never core/internal/)
#   P/share/hetrt/include/            C headers TVM-generated code compiles against
#   P/lib/cmake/hetrt/                find_package(hetrt CONFIG)
#   P/lib/pkgconfig/hetrt.pc
# The libdir is always "lib": the layout is relative to the core library.
include(CMakePackageConfigHelpers)
set(CMAKE_INSTALL_BINDIR bin)
set(CMAKE_INSTALL_INCLUDEDIR include)
set(CMAKE_INSTALL_LIBDIR lib)
set(HETRT_INSTALL_PLUGINDIR lib/hetrt-plugins)
set(HETRT_INSTALL_DATADIR share/hetrt)
set(HETRT_INSTALL_CMAKEDIR lib/cmake/hetrt)

install(TARGETS hetrt_core hetrt_toolchain hetrt_plugin_sdk EXPORT hetrtTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS hetrt_tvm_ffi_shim LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/core/include/ ${PROJECT_SOURCE_DIR}/toolchain/include/
                  ${PROJECT_SOURCE_DIR}/sdk/include/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${HETRT_DATA_OUTPUT_DIR}/ DESTINATION ${HETRT_INSTALL_DATADIR})
foreach(plugin cpu opencl vulkan cuda micro)
  if(TARGET hetrt_plugin_${plugin})
    install(TARGETS hetrt_plugin_${plugin} LIBRARY DESTINATION ${HETRT_INSTALL_PLUGINDIR})
  endif()
endforeach()

install(EXPORT hetrtTargets NAMESPACE hetrt:: DESTINATION ${HETRT_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/hetrtConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/hetrtConfig.cmake
  INSTALL_DESTINATION ${HETRT_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR HETRT_INSTALL_PLUGINDIR HETRT_INSTALL_DATADIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/hetrtConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/hetrtConfig.cmake ${CMAKE_BINARY_DIR}/cmake/hetrtConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/hetrtPluginHelpers.cmake ${PROJECT_SOURCE_DIR}/cmake/plugin_exports.map
        DESTINATION ${HETRT_INSTALL_CMAKEDIR})
configure_file(${PROJECT_SOURCE_DIR}/cmake/hetrt.pc.in ${CMAKE_BINARY_DIR}/hetrt.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/hetrt.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
