# pipeline/cmake/version.cmake: writes the build's version.c, run by the build (not
# only at configure time) so a new commit or an edit shows up in the next
# `sstpipe --version` without a re-configure. configure_file leaves the file
# untouched when nothing changed, so an unchanged version recompiles nothing.
#
# cmake -DSOURCE_DIR=... -DOUT=.../version.c -DVERSION=1.2.3 -P pipeline/cmake/version.cmake
#
# The git part is `git describe --tags --always --dirty` of SOURCE_DIR, and
# only when SOURCE_DIR is the top of its own checkout: a release tarball
# unpacked inside some other git tree (a packaging repository) must not
# report that tree's commit.
foreach(var SOURCE_DIR OUT VERSION)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "version.cmake: ${var} is not set")
  endif()
endforeach()

set(SSTPIPE_GIT "")
find_program(GIT git)
if(GIT)
  execute_process(COMMAND ${GIT} -C ${SOURCE_DIR} rev-parse --show-toplevel
                  OUTPUT_VARIABLE top RESULT_VARIABLE rc ERROR_QUIET
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  file(REAL_PATH "${SOURCE_DIR}" src)
  if(rc EQUAL 0)
    file(REAL_PATH "${top}" top)
  endif()
  if(rc EQUAL 0 AND top STREQUAL src)
    execute_process(COMMAND ${GIT} -C ${SOURCE_DIR} describe --tags --always --dirty
                    OUTPUT_VARIABLE SSTPIPE_GIT RESULT_VARIABLE rc ERROR_QUIET
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT rc EQUAL 0)
      set(SSTPIPE_GIT "")
    endif()
  endif()
endif()

if(SSTPIPE_GIT)
  set(SSTPIPE_VERSION_STRING "${VERSION} (git ${SSTPIPE_GIT})")
else()
  set(SSTPIPE_VERSION_STRING "${VERSION}")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/version.c.in ${OUT} @ONLY)
