# pipeline/cmake/package.cmake: the Debian package, `cpack -G DEB` in a build
# directory (README "Package"): sstpipe_VERSION-1_ARCH.deb holding what
# `cmake --install` installs, under /usr. Its Depends come from the shared
# libraries the binaries link, found by dpkg-shlibdeps (dpkg-dev) as Debian's
# own packages do, so they are right for the machine that built it: the
# package installs with `apt install ./sstpipe_*.deb`, which pulls them in.
# tests/e2e/test_package.py builds one and checks it.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME sstpipe)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "compile MediaWiki XML dumps into aligned SSTable files")
set(CPACK_PACKAGE_DESCRIPTION
    "sstpipe compiles MediaWiki XML dumps (bz2, gz, xz, zst or plain) into
SSTable files, one record per page (key: the title, value: the first bytes of
the text), and verifies, profiles and tunes them. Each stage is a command
(extract, truncate, sort, write); build runs them in one process; nightly
builds, verifies and publishes the newest dump atomically, for cron. Also
wikigen, a generator of synthetic dumps.")
set(SSTPIPE_PACKAGE_MAINTAINER "sstpipe developers <sstpipe@localhost>" CACHE STRING
    "the Maintainer field of the Debian package")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${SSTPIPE_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The libraries sstpipe loads on first use (stages/common/dynlib.h) are not
# linked, so dpkg-shlibdeps cannot see them: the packages that own the
# files this build found are named here, at their version here or later
# (CPack adds what dpkg-shlibdeps finds to these).
set(SSTPIPE_DLOPEN_DEPENDS)
find_program(SSTPIPE_DPKG_QUERY dpkg-query)
if(SSTPIPE_DPKG_QUERY)
  foreach(lib SP_SONAME_LIBXML2 SP_SONAME_LIBARCHIVE SP_SONAME_LIBMICROHTTPD)
    execute_process(COMMAND ${SSTPIPE_DPKG_QUERY} -S ${${lib}_FILE} OUTPUT_VARIABLE owner
                    RESULT_VARIABLE rc ERROR_QUIET)
    if(NOT rc EQUAL 0)
      # usrmerge: dpkg may know the file under /lib rather than /usr/lib.
      string(REGEX REPLACE "^/usr/lib/" "/lib/" alt ${${lib}_FILE})
      execute_process(COMMAND ${SSTPIPE_DPKG_QUERY} -S ${alt} OUTPUT_VARIABLE owner
                      RESULT_VARIABLE rc ERROR_QUIET)
    endif()
    if(rc EQUAL 0 AND owner MATCHES "^([^:, ]+)")
      set(pkg ${CMAKE_MATCH_1})
      execute_process(COMMAND ${SSTPIPE_DPKG_QUERY} -W -f \${Version} ${pkg}
                      OUTPUT_VARIABLE version ERROR_QUIET)
      list(APPEND SSTPIPE_DLOPEN_DEPENDS "${pkg} (>= ${version})")
    endif()
  endforeach()
endif()
string(REPLACE ";" ", " CPACK_DEBIAN_PACKAGE_DEPENDS "${SSTPIPE_DLOPEN_DEPENDS}")
# Binaries stripped, as Debian ships them; root owns every file.
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
