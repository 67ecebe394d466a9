# pipeline/cmake/md-man.cmake: makes a man page from the Markdown that is its
# subject's one description, so the page can never say something else:
# sstpipe-format(5) from stages/sst/FORMAT.md (the format's specification),
# wikigen(1) from data/README.md (the generator's). The "##" sections become
# the page's sections, less those DROP names (what is for developers, not a
# page: speeds, source files); go-md2man (Debian's go-md2man) turns the
# Markdown into roff; the page is installed gzipped, as Debian policy wants.
#
# cmake -DSOURCE=FORMAT.md -DOUTPUT=sstpipe-format.5.gz -DMD2MAN=/usr/bin/go-md2man
#       -DGZIP=/usr/bin/gzip -DVERSION=1.0.0 -DPAGE=sstpipe-format -DSECTION=5
#       -DWHATIS="the sstpipe SSTable file format" -DSEE_ALSO="**sstpipe**(1)"
#       [-DDROP="Speed|Sources"] [-DTITLE_IN_DESCRIPTION=ON] -P pipeline/cmake/md-man.cmake
foreach(var SOURCE OUTPUT MD2MAN GZIP VERSION PAGE SECTION WHATIS SEE_ALSO)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "md-man.cmake: ${var} is not set")
  endif()
endforeach()

file(READ ${SOURCE} md)
# The first line ("# The sstpipe SSTable format, version 1") is the title:
# the description's first sentence where it says more than the NAME line.
string(REGEX MATCH "^# ([^\n]*)\n" title "${md}")
if(NOT title)
  message(FATAL_ERROR "md-man.cmake: ${SOURCE} does not start with a '# ' title")
endif()
set(title "${CMAKE_MATCH_1}")
string(REGEX REPLACE "^# [^\n]*\n" "" md "${md}")
string(REPLACE "|" ";" DROP "${DROP}")
foreach(section ${DROP})
  # From the section's heading to the next "## " heading or the end.
  string(FIND "${md}" "\n## ${section}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "md-man.cmake: ${SOURCE} has no section '## ${section}' to drop")
  endif()
  string(SUBSTRING "${md}" 0 ${at} head)
  math(EXPR rest_at "${at} + 1")
  string(SUBSTRING "${md}" ${rest_at} -1 rest)
  string(FIND "${rest}" "\n## " next)
  if(next EQUAL -1)
    set(md "${head}\n")
  else()
    string(SUBSTRING "${rest}" ${next} -1 rest)
    set(md "${head}${rest}")
  endif()
endforeach()
# A two-column table ("| option | meaning |") becomes a list of terms
# (.TP), which the terminal wraps; tbl would draw its rows past the right
# edge. The header row goes; each row is matched with the line ends on
# both sides, so one pass converts every other row: repeat.
string(REGEX REPLACE "\n\\|[^|\n]*\\|[^|\n]*\\|\n\\|---\\|---\\|\n" "\n" md "${md}")
set(row "\n\\| ([^|\n]+) \\| ([^|\n]+) \\|\n")
while(md MATCHES "${row}")
  string(REGEX REPLACE "${row}" "\n\\1\n: \\2\n\n" md "${md}")
endwhile()
# One level up: "## Footer" is a section (.SH), "### ..." a subsection (.SS).
string(REGEX REPLACE "(^|\n)#(#+ )" "\\1\\2" md "${md}")
if(TITLE_IN_DESCRIPTION)
  set(md "${title}.\n${md}")
endif()
string(TOUPPER "${PAGE}" upper)
set(md "% ${upper} ${SECTION} \"\" \"sstpipe ${VERSION}\" \"sstpipe manual\"

# NAME

${PAGE} - ${WHATIS}

# DESCRIPTION

${md}
# SEE ALSO

${SEE_ALSO}
")
get_filename_component(dir ${OUTPUT} DIRECTORY)
set(tmp_md ${dir}/${PAGE}.${SECTION}.md)
set(tmp_roff ${dir}/${PAGE}.${SECTION})
file(WRITE ${tmp_md} "${md}")
execute_process(COMMAND ${MD2MAN} -in ${tmp_md} -out ${tmp_roff} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "md-man.cmake: ${MD2MAN} failed on ${tmp_md}")
endif()
# -n: no name or time stamp inside, so the same page gives the same bytes.
execute_process(COMMAND ${GZIP} -9n -c ${tmp_roff} OUTPUT_FILE ${OUTPUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "md-man.cmake: ${GZIP} failed on ${tmp_roff}")
endif()
