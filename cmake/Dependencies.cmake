# Every dependency is a Debian/Ubuntu package (scripts/install-deps.sh names them).
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(fmt REQUIRED)
find_package(ZLIB REQUIRED)

# Debian's libopenblas-dev ships no CMake config; cblas.h lives in a per-variant directory.
find_path(OPENBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas openblas-pthread openblas-openmp x86_64-linux-gnu x86_64-linux-gnu/openblas-pthread)
find_library(OPENBLAS_LIBRARY NAMES openblas)
if(NOT OPENBLAS_INCLUDE_DIR OR NOT OPENBLAS_LIBRARY)
  message(FATAL_ERROR "OpenBLAS not found: install libopenblas-dev (scripts/install-deps.sh)")
endif()
# libattnprof opens OpenBLAS on first use (src/cpu/openblas.cpp says why), by the soname the
# linker would have recorded; targets that call cblas directly (benchmarks) link attnprof_openblas.
get_filename_component(ATTNPROF_OPENBLAS_REAL "${OPENBLAS_LIBRARY}" REALPATH)
execute_process(COMMAND "${CMAKE_OBJDUMP}" -p "${ATTNPROF_OPENBLAS_REAL}" OUTPUT_VARIABLE ATTNPROF_OPENBLAS_HEADERS
                RESULT_VARIABLE ATTNPROF_OBJDUMP_RC ERROR_QUIET)
string(REGEX MATCH "SONAME +([^\n]+)" ATTNPROF_OPENBLAS_SONAME_LINE "${ATTNPROF_OPENBLAS_HEADERS}")
set(ATTNPROF_OPENBLAS_SONAME "${CMAKE_MATCH_1}")
if(NOT ATTNPROF_OPENBLAS_SONAME)
  message(FATAL_ERROR "OpenBLAS: no SONAME read from ${ATTNPROF_OPENBLAS_REAL} with '${CMAKE_OBJDUMP} -p' (rc ${ATTNPROF_OBJDUMP_RC})")
endif()
message(STATUS "attnprof: OpenBLAS ${ATTNPROF_OPENBLAS_SONAME}, opened on first use")
add_library(attnprof_openblas_headers INTERFACE)
target_include_directories(attnprof_openblas_headers INTERFACE ${OPENBLAS_INCLUDE_DIR})
add_library(attnprof_openblas INTERFACE)
target_link_libraries(attnprof_openblas INTERFACE attnprof_openblas_headers ${OPENBLAS_LIBRARY})

# oneDNN (libdnnl-dev) is optional: its bf16 matmul is the CPU's bf16 ceiling (the roofline) and
# a benchmark yardstick. Without it the ceiling is measured with attnprof's own bf16 GEMM.
# Found by its header and library, not by its CMake config: Debian's dnnl-config.cmake requires
# OpenCL (find_package(OpenCL REQUIRED)), which a --no-install-recommends install lacks, and a
# failed REQUIRED inside a config stops the configure even under QUIET. Optional means optional.
find_path(ATTNPROF_DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp)
find_library(ATTNPROF_DNNL_LIBRARY NAMES dnnl)
if(ATTNPROF_DNNL_INCLUDE_DIR AND ATTNPROF_DNNL_LIBRARY)
  add_library(attnprof_dnnl INTERFACE)
  target_include_directories(attnprof_dnnl SYSTEM INTERFACE ${ATTNPROF_DNNL_INCLUDE_DIR})
  target_link_libraries(attnprof_dnnl INTERFACE ${ATTNPROF_DNNL_LIBRARY})
  message(STATUS "attnprof: oneDNN (${ATTNPROF_DNNL_LIBRARY}) for the bf16 ceiling")
else()
  message(STATUS "attnprof: oneDNN not found (libdnnl-dev); the bf16 ceiling uses attnprof's own GEMM")
endif()
