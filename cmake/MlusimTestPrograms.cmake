# Build settings of the GoogleTest programs (tests/): mlusim_test_program(<target>).
#
# MLUSIM_TEST_OPTIMIZATION: the optimisation flag for the test programs' own sources in the
# optimised build types (RelWithDebInfo, Release); empty = the build type's flags. Default -Og:
# a test source is mostly GoogleTest macro expansions, whose -O2 code generation is most of its
# compile time, while the work a test drives runs in the libraries, which keep -O2. Measured on
# the 2-core CI machine (GCC 12, -g1): driver/api/ext_test.cpp 8.2 s at -O2, 4.1 s at -Og;
# sim/trace/trace_writer_test.cpp 19.0 s vs 7.7 s. -Og rather than -O0: the naive reference
# loops some tests check kernels against stay optimised, and a failing test steps well in gdb.
# The sanitizer and fuzz builds set their own optimisation (tools/test.sh) and are left alone.
set(MLUSIM_TEST_OPTIMIZATION "-Og" CACHE STRING
    "Optimisation flag of the test programs' sources in RelWithDebInfo/Release builds (empty: the build type's)")

# mlusim_test_program(<target>): the project's warnings plus MLUSIM_TEST_OPTIMIZATION.
function(mlusim_test_program target)
  mlusim_set_warnings(${target})
  if(MLUSIM_TEST_OPTIMIZATION AND NOT MLUSIM_SANITIZE AND NOT MLUSIM_FUZZ)
    # Compile options follow CMAKE_CXX_FLAGS_<CONFIG> on the command line, so this -O wins.
    target_compile_options(${target} PRIVATE
      $<$<CONFIG:RelWithDebInfo,Release>:${MLUSIM_TEST_OPTIMIZATION}>)
  endif()
endfunction()
