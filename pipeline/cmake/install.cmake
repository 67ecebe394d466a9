# pipeline/cmake/install.cmake: what `cmake --install` puts where (and so what the
# Debian package holds, pipeline/cmake/package.cmake), beside the binaries:
#   share/man/man1/sstpipe.1.gz         generated from the command table
#   share/bash-completion/completions/sstpipe   likewise
#   share/man/man5/sstpipe-format.5.gz  the file format, from stages/sst/FORMAT.md
#   share/man/man1/wikigen.1.gz         the dump generator, from data/README.md
#   share/man/man3/sstpipe.3.gz         libsstpipe, stages/sst/sstpipe.3 as it is
#   share/doc/sstpipe/                  README.md, FORMAT.md, TABLESET.md, MANIFEST.md and
#                                       examples/ (default.ini, nightly.ini)
# Man pages are made at build time into build/man/, gzipped as Debian wants.
include(GNUInstallDirs)
set(SSTPIPE_DOCDIR ${CMAKE_INSTALL_FULL_DOCDIR})

# go-md2man turns the Markdown of sstpipe-format(5) and wikigen(1) into
# roff (pipeline/cmake/md-man.cmake); without it (a minimal build machine)
# the pages are not made (FORMAT.md is still installed), and the build says so.
# pipeline/install-deps installs it.
find_program(SSTPIPE_GO_MD2MAN go-md2man)
find_program(SSTPIPE_GZIP gzip REQUIRED)
set(SSTPIPE_MAN_DIR ${CMAKE_BINARY_DIR}/man)
# sstpipe_md_man(PAGE SECTION SOURCE WHATIS SEE_ALSO [DROP sections] [TITLE]):
# the page PAGE.SECTION.gz from SOURCE, built with ALL and installed.
function(sstpipe_md_man page section source whatis see_also)
  cmake_parse_arguments(arg "TITLE" "" "DROP" ${ARGN})
  set(out ${SSTPIPE_MAN_DIR}/${page}.${section}.gz)
  string(JOIN "|" drop ${arg_DROP})
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${SSTPIPE_MAN_DIR}
    COMMAND ${CMAKE_COMMAND} -DSOURCE=${CMAKE_SOURCE_DIR}/${source} -DOUTPUT=${out}
            -DMD2MAN=${SSTPIPE_GO_MD2MAN} -DGZIP=${SSTPIPE_GZIP} -DVERSION=${PROJECT_VERSION}
            -DPAGE=${page} -DSECTION=${section} -DWHATIS=${whatis} -DSEE_ALSO=${see_also}
            -DDROP=${drop} -DTITLE_IN_DESCRIPTION=${arg_TITLE}
            -P ${CMAKE_SOURCE_DIR}/pipeline/cmake/md-man.cmake
    DEPENDS ${CMAKE_SOURCE_DIR}/${source} ${CMAKE_SOURCE_DIR}/pipeline/cmake/md-man.cmake
    COMMENT "${page}(${section}) from ${source}" VERBATIM)
  add_custom_target(sp_man_${page} ALL DEPENDS ${out})
  install(FILES ${out} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
endfunction()
if(SSTPIPE_GO_MD2MAN)
  sstpipe_md_man(sstpipe-format 5 stages/sst/FORMAT.md "the sstpipe SSTable file format"
                 "**sstpipe**(1)" TITLE)
  sstpipe_md_man(wikigen 1 data/README.md "generate synthetic MediaWiki XML dumps"
                 "**sstpipe**(1)" DROP "Speed" "Sources")
else()
  message(STATUS "go-md2man not found: sstpipe-format(5) and wikigen(1) are not made "
                 "(FORMAT.md is installed)")
endif()

# sstpipe(3) is written by hand; it is only gzipped, -n as every page here.
add_custom_command(
  OUTPUT ${SSTPIPE_MAN_DIR}/sstpipe.3.gz
  COMMAND ${CMAKE_COMMAND} -E make_directory ${SSTPIPE_MAN_DIR}
  COMMAND ${SSTPIPE_GZIP} -9n -c ${CMAKE_SOURCE_DIR}/stages/sst/sstpipe.3 > ${SSTPIPE_MAN_DIR}/sstpipe.3.gz
  DEPENDS ${CMAKE_SOURCE_DIR}/stages/sst/sstpipe.3
  COMMENT "sstpipe(3), gzipped" VERBATIM)
add_custom_target(sp_man_lib ALL DEPENDS ${SSTPIPE_MAN_DIR}/sstpipe.3.gz)
install(FILES ${SSTPIPE_MAN_DIR}/sstpipe.3.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man3)

install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/stages/sst/FORMAT.md
              ${CMAKE_SOURCE_DIR}/stages/sst/TABLESET.md ${CMAKE_SOURCE_DIR}/config/MANIFEST.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${CMAKE_SOURCE_DIR}/config/default.ini ${CMAKE_SOURCE_DIR}/config/nightly.ini
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
# -c's help names them where they are (pipeline/command/help.c): found from
# the installed program, for whatever prefix the install chose, or else
# under the configured prefix, which the man page names too.
file(RELATIVE_PATH SSTPIPE_EXAMPLES_FROM_BIN ${CMAKE_INSTALL_FULL_BINDIR}
     ${SSTPIPE_DOCDIR}/examples)
set_property(SOURCE ${CMAKE_SOURCE_DIR}/pipeline/command/help.c APPEND PROPERTY
             COMPILE_DEFINITIONS SSTPIPE_EXAMPLES_FROM_BIN="${SSTPIPE_EXAMPLES_FROM_BIN}"
             SSTPIPE_EXAMPLES_DIR="${SSTPIPE_DOCDIR}/examples")

# sstpipe(1) and the bash completion: the prose and logic of the
# templates, the commands, options and keys printed by the built sstpipe
# from its command table (`sstpipe --generate ...`, pipeline/command/generate.h), so
# they always list what the parser takes (tests/e2e/test_man_page.py,
# test_completion.py).
set(SSTPIPE_FILL -DSSTPIPE=$<TARGET_FILE:sstpipe>
    -DSSTPIPE_VERSION=${PROJECT_VERSION} -DSSTPIPE_DOCDIR=${SSTPIPE_DOCDIR} -P ${CMAKE_SOURCE_DIR}/pipeline/cmake/fill-template.cmake)
add_custom_command(
  OUTPUT ${SSTPIPE_MAN_DIR}/sstpipe.1.gz
  COMMAND ${CMAKE_COMMAND} -E make_directory ${SSTPIPE_MAN_DIR}
  COMMAND ${CMAKE_COMMAND} -DTEMPLATE=${CMAKE_SOURCE_DIR}/pipeline/command/sstpipe.1.in
          -DOUTPUT=${SSTPIPE_MAN_DIR}/sstpipe.1.gz -DGZIP=${SSTPIPE_GZIP}
          -DGENERATE=SSTPIPE_MAN_COMMANDS:man-commands,SSTPIPE_MAN_CONFIG:man-config
          ${SSTPIPE_FILL}
  DEPENDS sstpipe ${CMAKE_SOURCE_DIR}/pipeline/command/sstpipe.1.in ${CMAKE_SOURCE_DIR}/pipeline/cmake/fill-template.cmake
  COMMENT "sstpipe(1) from the command table" VERBATIM)
set(SSTPIPE_COMPLETION ${CMAKE_BINARY_DIR}/completion/sstpipe)
add_custom_command(
  OUTPUT ${SSTPIPE_COMPLETION}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/completion
  COMMAND ${CMAKE_COMMAND} -DTEMPLATE=${CMAKE_SOURCE_DIR}/pipeline/command/sstpipe.bash.in
          -DOUTPUT=${SSTPIPE_COMPLETION} -DGENERATE=SSTPIPE_COMPLETION_DATA:bash-completion
          ${SSTPIPE_FILL}
  DEPENDS sstpipe ${CMAKE_SOURCE_DIR}/pipeline/command/sstpipe.bash.in ${CMAKE_SOURCE_DIR}/pipeline/cmake/fill-template.cmake
  COMMENT "bash completion from the command table" VERBATIM)
add_custom_target(sp_generated_docs ALL DEPENDS ${SSTPIPE_MAN_DIR}/sstpipe.1.gz ${SSTPIPE_COMPLETION})
install(FILES ${SSTPIPE_MAN_DIR}/sstpipe.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${SSTPIPE_COMPLETION} DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
