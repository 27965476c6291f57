# Finds PyTorch (the PyPI wheel) in the project's Python and defines mlusim::libtorch.
#
# The wheel is the CUDA build, and its find_package(Torch) config fails on a machine without the
# CUDA toolkit ("Caffe2 version uses CUDA but I cannot find the CUDA libraries", pytorch#73427), so
# this module asks the interpreter where torch lives and describes the libraries itself:
#
#   MLUSIM_PYTHON        the interpreter with torch (default: <source>/.venv/bin/python, the venv
#                        tools/install-deps.sh makes; also sets Python3_EXECUTABLE)
#   MLUSIM_TORCH_VERSION torch.__version__, e.g. 2.14.1+cu130
#   MLUSIM_TORCH_DIR     the torch package folder (include/, lib/)
#   mlusim::libtorch     INTERFACE IMPORTED: torch's headers (as system headers), libtorch_cpu and
#                        libc10 (CPU ATen, the dispatcher, TorchScript; the CUDA libraries are not
#                        loaded by C++ programs), the libstdc++ ABI torch was built with, and C++20,
#                        which torch's headers require since 2.14. Only the torch layer links it.
set(MLUSIM_TORCH_REQUIRED_VERSION 2.14 CACHE INTERNAL "torch major.minor the bridge is written for")

set(_default_python ${PROJECT_SOURCE_DIR}/.venv/bin/python)
set(MLUSIM_PYTHON ${_default_python} CACHE FILEPATH
    "Python interpreter with torch ${MLUSIM_TORCH_REQUIRED_VERSION} (the project venv from tools/install-deps.sh)")
if(NOT EXISTS ${MLUSIM_PYTHON})
  message(FATAL_ERROR "MLUSIM_PYTHON: ${MLUSIM_PYTHON} does not exist. Run tools/install-deps.sh (it creates "
                      "the project venv .venv with torch ${MLUSIM_TORCH_REQUIRED_VERSION}), pass "
                      "-DMLUSIM_PYTHON=<python with torch>, or configure with -DMLUSIM_WITH_TORCH=OFF.")
endif()
set(Python3_EXECUTABLE ${MLUSIM_PYTHON} CACHE FILEPATH "Python of the torch layer (= MLUSIM_PYTHON)" FORCE)

execute_process(
  COMMAND ${MLUSIM_PYTHON} -c
    "import os, torch; print(torch.__version__); print(os.path.dirname(torch.__file__)); print(int(torch._C._GLIBCXX_USE_CXX11_ABI))"
  OUTPUT_VARIABLE _torch_info ERROR_VARIABLE _torch_err RESULT_VARIABLE _torch_rc OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _torch_rc EQUAL 0)
  message(FATAL_ERROR "MLUSIM_PYTHON: ${MLUSIM_PYTHON} cannot import torch (run tools/install-deps.sh):\n${_torch_err}")
endif()
string(REPLACE "\n" ";" _torch_info "${_torch_info}")
list(GET _torch_info 0 MLUSIM_TORCH_VERSION)
list(GET _torch_info 1 MLUSIM_TORCH_DIR)
list(GET _torch_info 2 _torch_cxx11_abi)
if(NOT MLUSIM_TORCH_VERSION MATCHES "^${MLUSIM_TORCH_REQUIRED_VERSION}\\.")
  message(FATAL_ERROR "MLUSIM_PYTHON: ${MLUSIM_PYTHON} has torch ${MLUSIM_TORCH_VERSION}; the bridge needs "
                      "${MLUSIM_TORCH_REQUIRED_VERSION}.x (no stable C++ ABI across minor versions). "
                      "Run tools/install-deps.sh.")
endif()
message(STATUS "torch ${MLUSIM_TORCH_VERSION} in ${MLUSIM_TORCH_DIR} (${MLUSIM_PYTHON})")

set(_torch_libs "")
foreach(lib torch_cpu c10)
  set(_path ${MLUSIM_TORCH_DIR}/lib/lib${lib}.so)
  if(NOT EXISTS ${_path})
    message(FATAL_ERROR "torch ${MLUSIM_TORCH_VERSION}: ${_path} is missing (a broken install? rerun tools/install-deps.sh)")
  endif()
  list(APPEND _torch_libs ${_path})
endforeach()

add_library(mlusim_libtorch INTERFACE IMPORTED GLOBAL)
add_library(mlusim::libtorch ALIAS mlusim_libtorch)
target_include_directories(mlusim_libtorch SYSTEM INTERFACE
  ${MLUSIM_TORCH_DIR}/include ${MLUSIM_TORCH_DIR}/include/torch/csrc/api/include)
target_link_libraries(mlusim_libtorch INTERFACE ${_torch_libs})
target_compile_definitions(mlusim_libtorch INTERFACE _GLIBCXX_USE_CXX11_ABI=${_torch_cxx11_abi})
target_compile_features(mlusim_libtorch INTERFACE cxx_std_20)
