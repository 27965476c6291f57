# MLUSIM_SANITIZE=ON instruments everything with ASan + UBSan (CI runs the sim tests this way).
if(MLUSIM_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
