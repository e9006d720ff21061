# cmake/cuda.cmake - decides whether the CUDA backend is built.
#
# Input:  YP_CUDA (cache, declared in the top-level CMakeLists.txt): AUTO, ON or OFF.
#   AUTO  build the CUDA backend when nvcc and cuDNN (cudnn.h + libcudnn) are both found
#   ON    same, but a missing nvcc or cuDNN fails the configure (CI uses this wherever nvcc exists)
#   OFF   never look
# Output: YP_HAVE_CUDA (ON/OFF), and when ON:
#   - the CUDA language enabled, CMAKE_CUDA_ARCHITECTURES = 75;80;86;89;90 unless given,
#   - the CUDA runtime linked statically (a binary built with CUDA starts on a machine with no driver
#     and no GPU; it only finds out when yp_backend_cuda_new() asks for a device),
#   - YP_CUDNN_INCLUDE_DIR, YP_CUDNN_LIBRARY, YP_CUDNN_VERSION for kernels/CMakeLists.txt.
#
# Architectures: sm_75 (T4, RTX 20xx), sm_80 (A100), sm_86 (RTX 30xx), sm_89 (RTX 40xx, L4),
# sm_90 (H100/H200). CMake's plain numbers mean SASS plus PTX for each, so newer GPUs (sm_100, sm_120)
# run the compute_90 PTX through the driver's JIT. sm_70 (V100) is missing because CUDA 13 removed
# Volta from nvcc (`nvcc --list-gpu-arch` starts at compute_75); building for it needs CUDA 12.x and
# -DCMAKE_CUDA_ARCHITECTURES="70;75;...". yp_backend_cuda_new() refuses GPUs older than the oldest
# architecture built, with a reason, instead of failing at the first kernel launch.

include(CheckLanguage)

set(YP_HAVE_CUDA OFF)
string(TOUPPER "${YP_CUDA}" _yp_cuda_mode)
if(_yp_cuda_mode MATCHES "^(1|YES|TRUE|Y)$")
  set(_yp_cuda_mode ON)
elseif(_yp_cuda_mode MATCHES "^(0|NO|FALSE|N)$")
  set(_yp_cuda_mode OFF)
endif()
if(NOT _yp_cuda_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "YP_CUDA must be AUTO, ON or OFF (got '${YP_CUDA}')")
endif()

# Reports why CUDA is not used: fatal under ON, a status line under AUTO.
macro(_yp_cuda_unavailable why)
  if(_yp_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR "YP_CUDA=ON but ${why}. Install it (or fix the path), or configure with -DYP_CUDA=AUTO or -DYP_CUDA=OFF.")
  endif()
  message(STATUS "yoloplan: CUDA backend: OFF (${why}; YP_CUDA=AUTO builds CPU only)")
endmacro()

if(_yp_cuda_mode STREQUAL "OFF")
  message(STATUS "yoloplan: CUDA backend: OFF (YP_CUDA=OFF)")
  return()
endif()

# ---- nvcc: CMAKE_CUDA_COMPILER, $CUDACXX, PATH, then the usual toolkit location ----
if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
  find_program(_yp_nvcc_on_path nvcc)
  if(NOT _yp_nvcc_on_path AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "CUDA compiler")
  endif()
  unset(_yp_nvcc_on_path CACHE)
endif()
if(DEFINED CMAKE_CUDA_COMPILER AND CMAKE_CUDA_COMPILER AND NOT EXISTS "${CMAKE_CUDA_COMPILER}")
  # Given explicitly (check_language then trusts it): resolve a bare name, reject a wrong path.
  find_program(_yp_nvcc_given "${CMAKE_CUDA_COMPILER}")
  if(_yp_nvcc_given)
    set(CMAKE_CUDA_COMPILER "${_yp_nvcc_given}" CACHE FILEPATH "CUDA compiler" FORCE)
  else()
    _yp_cuda_unavailable("CMAKE_CUDA_COMPILER=${CMAKE_CUDA_COMPILER} does not exist")
    unset(_yp_nvcc_given CACHE)
    return()
  endif()
  unset(_yp_nvcc_given CACHE)
endif()
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  _yp_cuda_unavailable("no working nvcc was found (none on PATH or in /usr/local/cuda/bin, or it failed CMake's test compile; see CMakeFiles/CMakeError.log)")
  return()
endif()

# ---- cuDNN: next to the toolkit first, then CUDNN_ROOT / system paths ----
get_filename_component(_yp_cuda_root "${CMAKE_CUDA_COMPILER}" DIRECTORY)
get_filename_component(_yp_cuda_root "${_yp_cuda_root}" DIRECTORY)
find_path(YP_CUDNN_INCLUDE_DIR cudnn.h
  HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${_yp_cuda_root}
  PATH_SUFFIXES include include/x86_64-linux-gnu)
find_library(YP_CUDNN_LIBRARY cudnn
  HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${_yp_cuda_root}
  PATH_SUFFIXES lib64 lib lib/x86_64-linux-gnu)
if(NOT YP_CUDNN_INCLUDE_DIR OR NOT YP_CUDNN_LIBRARY)
  _yp_cuda_unavailable("cuDNN was not found (cudnn.h: ${YP_CUDNN_INCLUDE_DIR}, libcudnn: ${YP_CUDNN_LIBRARY}; set CUDNN_ROOT)")
  return()
endif()

set(YP_CUDNN_VERSION "unknown")
foreach(_yp_h cudnn_version.h cudnn.h)
  if(EXISTS "${YP_CUDNN_INCLUDE_DIR}/${_yp_h}")
    file(STRINGS "${YP_CUDNN_INCLUDE_DIR}/${_yp_h}" _yp_lines REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ")
    if(_yp_lines)
      string(REGEX REPLACE ".*CUDNN_MAJOR ([0-9]+).*" "\\1" _yp_major "${_yp_lines}")
      string(REGEX REPLACE ".*CUDNN_MINOR ([0-9]+).*" "\\1" _yp_minor "${_yp_lines}")
      string(REGEX REPLACE ".*CUDNN_PATCHLEVEL ([0-9]+).*" "\\1" _yp_patch "${_yp_lines}")
      set(YP_CUDNN_VERSION "${_yp_major}.${_yp_minor}.${_yp_patch}")
      break()
    endif()
  endif()
endforeach()

# ---- enable ----
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES "75;80;86;89;90")
endif()
set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)

set(YP_HAVE_CUDA ON)
message(STATUS "yoloplan: CUDA backend: ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
               "archs ${CMAKE_CUDA_ARCHITECTURES}, cuDNN ${YP_CUDNN_VERSION} at ${YP_CUDNN_LIBRARY}, "
               "runtime static)")
