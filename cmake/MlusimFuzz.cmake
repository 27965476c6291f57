# MLUSIM_FUZZ=ON: the libFuzzer targets of tests/fuzz/ (one program per <name>_fuzz.cpp; see
# docs/fuzzing.md). Needs clang with its runtime libraries (Debian 12: clang-14 and
# libclang-rt-14-dev, both in tools/install-deps.sh):
#
#   CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Fuzz \
#     -DMLUSIM_FUZZ=ON -DMLUSIM_WITH_TORCH=OFF -DMLUSIM_BUILD_TESTS=OFF -DMLUSIM_BUILD_BENCH=OFF
#   cmake --build build-fuzz --target mlusim_fuzzers
#
# Everything is compiled with libFuzzer's coverage instrumentation plus ASan + UBSan (the
# sanitizers of MLUSIM_SANITIZE, cmake/MlusimSanitizers.cmake); only the fuzz targets link the
# libFuzzer runtime (-fsanitize=fuzzer, which brings main()). tools/test.sh builds and runs them
# for a bounded time in its sanitizer stage.

if(NOT MLUSIM_FUZZ)
  return()
endif()

if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang" OR NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR
    "MLUSIM_FUZZ=ON needs clang (libFuzzer is part of clang), but CMAKE_CXX_COMPILER is "
    "${CMAKE_CXX_COMPILER} (${CMAKE_CXX_COMPILER_ID}) and CMAKE_C_COMPILER is ${CMAKE_C_COMPILER} "
    "(${CMAKE_C_COMPILER_ID}). Configure a new build folder with clang, e.g.\n"
    "  CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -G Ninja -DMLUSIM_FUZZ=ON ...\n"
    "(Debian 12 packages clang-14 and libclang-rt-14-dev; tools/install-deps.sh installs them). "
    "A folder first configured with another compiler keeps it: delete its CMakeCache.txt.")
endif()

# libFuzzer's runtime (libclang_rt.fuzzer-*.a) is a separate Debian package: say so here rather
# than at the first link.
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer")
set(CMAKE_REQUIRED_LINK_OPTIONS "-fsanitize=fuzzer")
check_cxx_source_compiles([[
#include <cstddef>
#include <cstdint>
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }
]] MLUSIM_HAVE_LIBFUZZER)
unset(CMAKE_REQUIRED_FLAGS)
unset(CMAKE_REQUIRED_LINK_OPTIONS)
if(NOT MLUSIM_HAVE_LIBFUZZER)
  message(FATAL_ERROR
    "MLUSIM_FUZZ=ON: ${CMAKE_CXX_COMPILER} cannot link a program with -fsanitize=fuzzer: libFuzzer's "
    "runtime is missing (Debian 12: apt-get install libclang-rt-14-dev, for clang-14). "
    "Details in CMakeFiles/CMakeConfigureLog.yaml or CMakeError.log.")
endif()

mlusim_instrument_all(fuzzer-no-link)

# Build type Fuzz (any other works too): -O1 runs the targets about as fast as -O2 for two thirds
# of its compile time (-O0 compiles fastest but runs the simulator 10 to 60 times slower); line
# tables are enough for symbolized stacks; no NDEBUG, so library assertions (nlohmann's
# JSON_ASSERT on misuse of a const json) stay on.
# (CMake creates the cache entries, empty, for the build type being configured: fill them unless set.)
foreach(lang C CXX)
  if(NOT CMAKE_${lang}_FLAGS_FUZZ)
    set(CMAKE_${lang}_FLAGS_FUZZ "-O1 -gline-tables-only" CACHE STRING "${lang} flags of the Fuzz build type" FORCE)
  endif()
endforeach()

# mlusim_add_fuzzer(<name> [SOURCES <file>...] LIBS <target>...): tests/fuzz/<name>.cpp (defines
# LLVMFuzzerTestOneInput) and the extra SOURCES as the program <name>, linked with libFuzzer. Fuzz targets see the source tree's configs/ as
# MLUSIM_FUZZ_CONFIG_DIR (they set $MLUSIM_CONFIG_DIR to it unless it is set). LIBS must name real
# targets, not ALIAS ones (mlusim_driver, not mlusim::driver): they are defined after this file.
function(mlusim_add_fuzzer name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${CMAKE_CURRENT_SOURCE_DIR}/${name}.cpp ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  target_compile_definitions(${name} PRIVATE MLUSIM_FUZZ_CONFIG_DIR="${PROJECT_SOURCE_DIR}/configs")
  mlusim_set_warnings(${name})
  add_dependencies(mlusim_fuzzers ${name})
endfunction()

add_custom_target(mlusim_fuzzers)
# The libraries the targets link (sim, driver, tools/mlusim) are defined later: target names in
# target_link_libraries are resolved when the build system is generated.
add_subdirectory(tests/fuzz)
