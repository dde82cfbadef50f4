# ATTNPROF_CUDA=AUTO builds the CUDA backend when a toolkit is found; ON makes a missing one an error.
string(TOUPPER "${ATTNPROF_CUDA}" ATTNPROF_CUDA)
if(NOT ATTNPROF_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "ATTNPROF_CUDA must be AUTO, ON or OFF (got '${ATTNPROF_CUDA}')")
endif()
set(ATTNPROF_HAVE_CUDA OFF)
if(NOT ATTNPROF_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    if(CMAKE_VERSION VERSION_LESS 3.25.2)
      # FindCUDAToolkit of CMake 3.25.0-3.25.1 (Debian 12's) marks CUDA::nvToolsExt deprecated
      # without checking that the target exists, and CUDA 12.9+ ships no nvToolsExt library:
      # "set_property could not find TARGET CUDA::nvToolsExt". That branch runs only for projects
      # requiring CMake >= 3.25, so the module is read here as a 3.24 project would read it
      # (fixed in CMake 3.25.2). The variables used below are passed out of the block.
      block(PROPAGATE CUDAToolkit_FOUND CUDAToolkit_VERSION CUDAToolkit_INCLUDE_DIRS
                      CUDAToolkit_LIBRARY_DIR CUDAToolkit_BIN_DIR)
        set(CMAKE_MINIMUM_REQUIRED_VERSION 3.24)
        find_package(CUDAToolkit REQUIRED)
      endblock()
    else()
      find_package(CUDAToolkit REQUIRED)
    endif()
    set(ATTNPROF_HAVE_CUDA ON)
  elseif(ATTNPROF_CUDA STREQUAL "ON")
    message(FATAL_ERROR "ATTNPROF_CUDA=ON but no CUDA toolkit (nvcc) was found; install one or use ATTNPROF_CUDA=AUTO/OFF")
  endif()
endif()
message(STATUS "attnprof: CUDA backend ${ATTNPROF_HAVE_CUDA}")
