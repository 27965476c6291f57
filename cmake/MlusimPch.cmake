# Precompiled headers for the translation units that all parse the same heavy third-party headers.
#
# Measured on the 2-core CI machine (GCC 12, -O2 -g1): torch's <torch/library.h> + <ATen/core/Tensor.h>
# + <ATen/ops/empty.h> cost 16.5 s of CPU per file before a line of the bridge is compiled (scan_ops.cpp:
# 35.3 s without, 23.6 s with the PCH, whose own build costs 38 s once); CLI11's <CLI/CLI.hpp> costs
# 10 s per file of tools/mlusim. Only third-party headers go in a PCH: a project header there would
# rebuild every file of the target whenever it changes.
#
# MLUSIM_PCH=OFF compiles without them (same objects, slower); ccache caches PCH builds only with
# `sloppiness = pch_defines,time_macros` (README.md, Building).
# Off by default in the fuzz build, which compiles only a few of these files.
if(MLUSIM_FUZZ)
  set(_mlusim_pch_default OFF)
else()
  set(_mlusim_pch_default ON)
endif()
option(MLUSIM_PCH "Precompile the heavy third-party headers (torch, CLI11) of the targets that share them"
       ${_mlusim_pch_default})

# mlusim_use_pch(<target> <header>...): precompile <header>... for every C++ source of <target>
# (a no-op when MLUSIM_PCH is OFF).
function(mlusim_use_pch target)
  if(MLUSIM_PCH)
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()
