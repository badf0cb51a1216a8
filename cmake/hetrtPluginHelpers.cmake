# hetrt_add_plugin(NAME SOURCES src...): a device plugin as hetrt loads it,
# libhetrt_plugin_<NAME>.so, exporting only hetrt_plugin_get_api (the rest of
# the plugin, its C++ runtime instances included, stays inside), compiled
# against the plugin ABI headers only: a plugin never links the core.
# Used by hetrt's own build and, installed, by out-of-tree plugins through
# find_package(hetrt CONFIG).
set(HETRT_PLUGIN_EXPORTS_MAP "${CMAKE_CURRENT_LIST_DIR}/plugin_exports.map")

function(hetrt_add_plugin name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES")
  set(sources ${arg_SOURCES} ${arg_UNPARSED_ARGUMENTS})
  if(NOT sources)
    message(FATAL_ERROR "hetrt_add_plugin(${name}): no SOURCES given")
  endif()
  add_library(${name} MODULE ${sources})
  target_link_libraries(${name} PRIVATE hetrt::plugin_sdk)
  target_link_options(${name} PRIVATE -Wl,--version-script=${HETRT_PLUGIN_EXPORTS_MAP})
  if(NOT HETRT_SANITIZE)  # sanitizer runtimes resolve from the program (clang's live in executables only)
    # Everything resolved at link time: no hidden dependence on the core.
    target_link_options(${name} PRIVATE -Wl,--no-undefined)
  endif()
  set_target_properties(${name} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "hetrt_plugin_${name}"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON
    LINK_DEPENDS ${HETRT_PLUGIN_EXPORTS_MAP})
endfunction()
