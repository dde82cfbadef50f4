# One layer per folder of src/ (docs/architecture.md draws them). A layer is two targets:
#   attnprof_<layer>_headers  INTERFACE: the one include root through which the layer's headers
#                             are reached, and the headers targets of the layers below it;
#   attnprof_<layer>          OBJECT: the folder's sources, compiled with only that root and the
#                             roots of the layers it names (the shared libattnprof holds them all).
# The include root is a folder of the build tree, layers/<layer>, holding two links: <layer> ->
# src/<layer> (so "core/json_dump.h" reads as in the source tree) and attnprof/ -> the public
# headers the layer owns (include/attnprof/*.h). src/ and include/ themselves are on no layer's
# path: an #include of a layer above, or of a public header owned by one, does not compile.

# Made anew at each configure, so a header taken off a layer's list is gone from its root.
file(REMOVE_RECURSE ${PROJECT_BINARY_DIR}/layers)

# attnprof_layer_headers(<layer> [PUBLIC_HEADERS h...] [BELOW layer...])
function(attnprof_layer_headers layer)
  cmake_parse_arguments(ARG "" "" "PUBLIC_HEADERS;BELOW" ${ARGN})
  set(root ${PROJECT_BINARY_DIR}/layers/${layer})
  file(MAKE_DIRECTORY ${root}/attnprof)
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${layer} ${root}/${layer} SYMBOLIC)
  foreach(header IN LISTS ARG_PUBLIC_HEADERS)
    if(NOT EXISTS ${PROJECT_SOURCE_DIR}/include/attnprof/${header})
      message(FATAL_ERROR "layer ${layer}: no public header include/attnprof/${header}")
    endif()
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/include/attnprof/${header} ${root}/attnprof/${header} SYMBOLIC)
  endforeach()
  add_library(attnprof_${layer}_headers INTERFACE)
  target_include_directories(attnprof_${layer}_headers INTERFACE $<BUILD_INTERFACE:${root}>)
  foreach(below IN LISTS ARG_BELOW)
    target_link_libraries(attnprof_${layer}_headers INTERFACE attnprof_${below}_headers)
  endforeach()
endfunction()

# attnprof_layer(<layer> SOURCES s... [PUBLIC_HEADERS h...] [BELOW layer...]): the headers target
# and the object library of src/<layer>, with the third-party libraries every layer may use.
function(attnprof_layer layer)
  cmake_parse_arguments(ARG "" "" "SOURCES;PUBLIC_HEADERS;BELOW" ${ARGN})
  attnprof_layer_headers(${layer} PUBLIC_HEADERS ${ARG_PUBLIC_HEADERS} BELOW ${ARG_BELOW})
  add_library(attnprof_${layer} OBJECT ${ARG_SOURCES})
  set_target_properties(attnprof_${layer} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_compile_options(attnprof_${layer} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic>)
  target_link_libraries(attnprof_${layer} PRIVATE attnprof_${layer}_headers Threads::Threads OpenMP::OpenMP_CXX
                        attnprof_openblas_headers nlohmann_json::nlohmann_json fmt::fmt ZLIB::ZLIB)
  if(ATTNPROF_HAVE_CUDA)
    target_compile_definitions(attnprof_${layer} PRIVATE ATTNPROF_HAVE_CUDA=1)
  endif()
  if(TARGET attnprof_dnnl)
    target_link_libraries(attnprof_${layer} PRIVATE attnprof_dnnl)
    target_compile_definitions(attnprof_${layer} PRIVATE ATTNPROF_HAVE_DNNL=1)
  endif()
  target_sources(attnprof PRIVATE $<TARGET_OBJECTS:attnprof_${layer}>)
endfunction()
