# pipeline/cmake/fill-template.cmake: makes a file that is part prose, part generated
# from the command table: the man page sstpipe(1) from pipeline/command/sstpipe.1.in, the
# bash completion from pipeline/command/sstpipe.bash.in. Each @NAME@ that GENERATE names
# becomes what `SSTPIPE --generate WHAT` prints; the other @NAME@s are -D
# values (SSTPIPE_VERSION, SSTPIPE_DOCDIR: where the documentation is installed). With GZIP the file is written
# gzipped (gzip -9n: no name or time inside, the same page gives the same
# bytes), as Debian installs man pages.
#
# cmake -DSSTPIPE=path/to/sstpipe -DTEMPLATE=pipeline/command/sstpipe.1.in -DOUTPUT=sstpipe.1
#       -DGENERATE=SSTPIPE_MAN_COMMANDS:man-commands,SSTPIPE_MAN_CONFIG:man-config
#       [-DGZIP=/usr/bin/gzip] [-DSSTPIPE_VERSION=...] [-DSSTPIPE_DOCDIR=...] -P pipeline/cmake/fill-template.cmake
foreach(var SSTPIPE TEMPLATE OUTPUT GENERATE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "fill-template.cmake: ${var} is not set")
  endif()
endforeach()

string(REPLACE "," ";" pairs "${GENERATE}")
foreach(pair ${pairs})
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 name)
  list(GET pair 1 what)
  execute_process(COMMAND ${SSTPIPE} --generate ${what} OUTPUT_VARIABLE ${name}
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "fill-template.cmake: ${SSTPIPE} --generate ${what} failed (${rc})")
  endif()
  string(REGEX REPLACE "\n$" "" ${name} "${${name}}")
endforeach()

file(READ ${TEMPLATE} text)
string(CONFIGURE "${text}" text @ONLY)
if(text MATCHES "@[A-Z_]+@")
  message(FATAL_ERROR "fill-template.cmake: ${TEMPLATE}: ${CMAKE_MATCH_0} was not filled in")
endif()
if(GZIP)
  file(WRITE ${OUTPUT}.plain "${text}")
  execute_process(COMMAND ${GZIP} -9n -c ${OUTPUT}.plain OUTPUT_FILE ${OUTPUT} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "fill-template.cmake: ${GZIP} failed on ${OUTPUT}.plain")
  endif()
  file(REMOVE ${OUTPUT}.plain)
else()
  file(WRITE ${OUTPUT} "${text}")
endif()
