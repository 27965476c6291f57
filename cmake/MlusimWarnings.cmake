# Warnings applied to every mlusim target through mlusim_set_warnings(<target>).
function(mlusim_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
endfunction()
