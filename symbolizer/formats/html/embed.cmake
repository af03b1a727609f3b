# Turns the flame graph page's sources into C: one NUL-terminated char array
# per file. Run by the build (cmake -P) with
#   -DOUT=<file.c> -DINPUTS=<name=path|name=path...>
# so the page stays readable source under symbolizer/html/ and the binary
# needs no files at run time.
set(code "/* Generated from symbolizer/html/ by embed.cmake; do not edit. */\n")
string(APPEND code "#include <stddef.h>\n#include \"symbolizer/formats/html_assets.h\"\n")
string(REPLACE "|" ";" inputs "${INPUTS}")
foreach(pair ${inputs})
  string(REPLACE "=" ";" parts "${pair}")
  list(GET parts 0 name)
  list(GET parts 1 path)
  file(READ "${path}" hex HEX)
  string(LENGTH "${hex}" nhex)
  math(EXPR nbytes "${nhex} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  # Lines of 16 bytes keep the generated file readable by tools.
  string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){16})" "\\1\n" bytes "${bytes}")
  string(APPEND code "const char ${name}[] = {\n${bytes}0x00};\n")
  string(APPEND code "const size_t ${name}_len = ${nbytes};\n")
endforeach()
file(WRITE "${OUT}.tmp" "${code}")
file(RENAME "${OUT}.tmp" "${OUT}")
