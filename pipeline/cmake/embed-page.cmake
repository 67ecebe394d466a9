# embed-page.cmake: an HTML page compiled into the binary as two C strings,
# the text before a marker and the text after it, so the page is edited as
# HTML (syntax, a browser to try it) and the server writes what a request
# asks for between them. Run at build time:
#   cmake -DIN=page.html -DOUT=page.c -DMARKER="<!-- server -->" -DNAME=prefix
#         -DHEADER=dir/page.h -P embed-page.cmake
# defines NAME_head and NAME_tail (NUL-terminated char arrays), which
# HEADER declares.
file(READ "${IN}" text)
string(FIND "${text}" "${MARKER}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${IN}: no ${MARKER} in the page")
endif()
string(LENGTH "${MARKER}" mlen)
math(EXPR after "${at} + ${mlen}")
file(READ "${IN}" head LIMIT ${at} HEX)
file(READ "${IN}" tail OFFSET ${after} HEX)
# Bytes as hex, not a string literal: nothing in the page needs escaping.
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," head "${head}")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," tail "${tail}")
get_filename_component(src "${IN}" NAME)
file(WRITE "${OUT}.tmp"
     "/* Generated from ${src} by embed-page.cmake: do not edit. */\n"
     "#include \"${HEADER}\"\n"
     "const char ${NAME}_head[] = {${head}0};\n"
     "const char ${NAME}_tail[] = {${tail}0};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
