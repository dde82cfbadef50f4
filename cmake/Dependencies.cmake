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
add_library(attnprof_openblas INTERFACE)
target_include_directories(attnprof_openblas INTERFACE ${OPENBLAS_INCLUDE_DIR})
target_link_libraries(attnprof_openblas INTERFACE ${OPENBLAS_LIBRARY})

# oneDNN (libdnnl-dev) is optional: its bf16 matmul is the CPU's bf16 ceiling (the roofline) and
# a benchmark yardstick. Without it the ceiling is measured with attnprof's own bf16 GEMM.
find_package(dnnl CONFIG QUIET)
if(dnnl_FOUND)
  message(STATUS "attnprof: oneDNN ${dnnl_VERSION} for the bf16 ceiling")
else()
  message(STATUS "attnprof: oneDNN not found; the bf16 ceiling uses attnprof's own GEMM")
endif()
