# pipeline/cmake/format-man.cmake: makes the man page sstpipe-format(5) from
# stages/sst/FORMAT.md, the format's one specification, so the page can
# never say something else. FORMAT.md's title becomes the DESCRIPTION, its
# "##" sections the page's sections; go-md2man (Debian's go-md2man) turns the
# Markdown into roff; the page is installed gzipped, as Debian policy wants.
#
# cmake -DSOURCE=FORMAT.md -DOUTPUT=sstpipe-format.5.gz -DMD2MAN=/usr/bin/go-md2man
#       -DGZIP=/usr/bin/gzip -DVERSION=1.0.0 -P pipeline/cmake/format-man.cmake
foreach(var SOURCE OUTPUT MD2MAN GZIP VERSION)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "format-man.cmake: ${var} is not set")
  endif()
endforeach()

file(READ ${SOURCE} md)
# The first line, "# The sstpipe SSTable format, version 1", is the title.
string(REGEX MATCH "^# ([^\n]*)\n" title "${md}")
if(NOT title)
  message(FATAL_ERROR "format-man.cmake: ${SOURCE} does not start with a '# ' title")
endif()
set(title "${CMAKE_MATCH_1}")
string(REGEX REPLACE "^# [^\n]*\n" "" md "${md}")
# One level up: "## Footer" is a section (.SH), "### ..." a subsection (.SS).
string(REGEX REPLACE "(^|\n)#(#+ )" "\\1\\2" md "${md}")
set(md "% SSTPIPE-FORMAT 5 \"\" \"sstpipe ${VERSION}\" \"sstpipe manual\"

# NAME

sstpipe-format - the sstpipe SSTable file format

# DESCRIPTION

${title}.
${md}
# SEE ALSO

**sstpipe**(1)
")
get_filename_component(dir ${OUTPUT} DIRECTORY)
set(tmp_md ${dir}/sstpipe-format.5.md)
set(tmp_roff ${dir}/sstpipe-format.5)
file(WRITE ${tmp_md} "${md}")
execute_process(COMMAND ${MD2MAN} -in ${tmp_md} -out ${tmp_roff} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "format-man.cmake: ${MD2MAN} failed on ${tmp_md}")
endif()
# -n: no name or time stamp inside, so the same page gives the same bytes.
execute_process(COMMAND ${GZIP} -9n -c ${tmp_roff} OUTPUT_FILE ${OUTPUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "format-man.cmake: ${GZIP} failed on ${tmp_roff}")
endif()
