# pipeline/cmake/soname.cmake: sp_soname(VAR PREFIX) sets VAR to the SONAME
# of the shared library that pkg_check_modules(PREFIX ...) found (its
# PREFIX_LINK_LIBRARIES), read from the library's dynamic section, and
# VAR_FILE to that library's file (for the package's Depends). The
# libraries sstpipe loads on first use (stages/common/dynlib.h) are opened
# by that name, so the ABI opened is the one the headers described.
function(sp_soname var prefix)
  set(soname)
  foreach(lib ${${prefix}_LINK_LIBRARIES})
    get_filename_component(name ${lib} NAME)
    if(name MATCHES "\\.so($|\\.)")
      execute_process(COMMAND ${CMAKE_OBJDUMP} -p ${lib} OUTPUT_VARIABLE dump
                      RESULT_VARIABLE rc ERROR_QUIET)
      if(rc EQUAL 0 AND dump MATCHES "SONAME +([^ \r\n]+)")
        set(soname ${CMAKE_MATCH_1})
        get_filename_component(file ${lib} REALPATH)
        break()
      endif()
    endif()
  endforeach()
  if(NOT soname)
    message(FATAL_ERROR "cannot read the SONAME of ${prefix} (${${prefix}_LINK_LIBRARIES})")
  endif()
  message(STATUS "${prefix}: loaded on first use as ${soname}")
  set(${var} ${soname} PARENT_SCOPE)
  set(${var}_FILE ${file} PARENT_SCOPE)
endfunction()
