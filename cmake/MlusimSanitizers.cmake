# Sanitizer instrumentation of the whole build, shared by MLUSIM_SANITIZE (ASan + UBSan; CI runs the
# sim and driver tests this way) and MLUSIM_FUZZ (the same plus libFuzzer's coverage
# instrumentation; cmake/MlusimFuzz.cmake).

# The sanitizers both builds use, and the options that go with them: a UBSan finding aborts (as an
# ASan one does) instead of printing and going on, and frame pointers keep the reports' stacks whole.
set(MLUSIM_SANITIZERS address,undefined)
set(MLUSIM_SANITIZER_OPTIONS -fno-omit-frame-pointer -fno-sanitize-recover=undefined)

# mlusim_instrument_all([<extra sanitizer>...]): compiles every target defined from here on (this
# folder and below) with -fsanitize=<extra>,address,undefined and links them with ASan + UBSan.
# The extras apply to compiling only (e.g. fuzzer-no-link: coverage for libFuzzer, whose runtime
# only the fuzz targets link).
function(mlusim_instrument_all)
  list(JOIN ARGN "," extra)
  if(extra)
    set(extra "${extra},")
  endif()
  add_compile_options(-fsanitize=${extra}${MLUSIM_SANITIZERS} ${MLUSIM_SANITIZER_OPTIONS})
  add_link_options(-fsanitize=${MLUSIM_SANITIZERS})
endfunction()

# MLUSIM_FUZZ instruments with the same sanitizers itself (cmake/MlusimFuzz.cmake).
if(MLUSIM_SANITIZE AND NOT MLUSIM_FUZZ)
  mlusim_instrument_all()
endif()
