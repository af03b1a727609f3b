# Compiles every bpf/*.bpf.c against bpf/vmlinux_fallback.h (no kernel BTF needed).
file(MAKE_DIRECTORY ${OUT})
configure_file(${SRC}/vmlinux_fallback.h ${OUT}/vmlinux.h COPYONLY)
file(GLOB progs ${SRC}/*.bpf.c)
foreach(prog ${progs})
  get_filename_component(name ${prog} NAME_WE)
  execute_process(
    COMMAND ${CLANG} -g -O2 -target bpf -D__TARGET_ARCH_${ARCH} -I${OUT} -I${SRC} -Wall -Werror
            -c ${prog} -o ${OUT}/${name}.bpf.o
    RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${prog} does not build with vmlinux_fallback.h: add the types it needs")
  endif()
  message(STATUS "${name}.bpf.c builds with the fallback")
endforeach()
