# Runs one examples/ephapax/*.eph program the way its header says and checks
# what it prints. The header holds two lines:
#   -- run:    ephc run [OPTIONS] examples/ephapax/NAME.eph
#   -- prints: EXPECTED
# Called by ctest (examples/CMakeLists.txt) as
#   cmake -DEPHC=... -DSOURCE_DIR=... -DEXAMPLE=... -DRUN_TARGET=interp|cpu|vulkan [-DPASSES=O2] -P RunExample.cmake
# The command runs in SOURCE_DIR with --target=RUN_TARGET (and --passes=PASSES) added. For vulkan, a
# machine without a Vulkan device skips the test (it prints "skipped"), or fails it
# when EPH_REQUIRE_VULKAN=1.
file(STRINGS ${EXAMPLE} run_line REGEX "^-- run: ")
file(STRINGS ${EXAMPLE} prints_line REGEX "^-- prints: ")
if(NOT run_line OR NOT prints_line)
  message(FATAL_ERROR "${EXAMPLE}: the header needs `-- run: ephc run ...` and `-- prints: ...` lines")
endif()
string(REGEX REPLACE "^-- run: +ephc +" "" command "${run_line}")
string(REGEX REPLACE "^-- prints: " "" expected "${prints_line}")
separate_arguments(args UNIX_COMMAND "${command}")
if(PASSES)
  list(APPEND args --passes=${PASSES})
endif()

if(RUN_TARGET STREQUAL "vulkan")
  execute_process(COMMAND ${EPHC} devices OUTPUT_VARIABLE devices ERROR_VARIABLE devices_err)
  if(NOT devices MATCHES "vulkan")
    if("$ENV{EPH_REQUIRE_VULKAN}" STREQUAL "1")
      message(FATAL_ERROR "no Vulkan device (EPH_REQUIRE_VULKAN=1): ${devices}${devices_err}")
    endif()
    # ctest's SKIP_REGULAR_EXPRESSION marks the test skipped.
    message("no Vulkan device: skipped")
    return()
  endif()
endif()

execute_process(COMMAND ${EPHC} ${args} --target=${RUN_TARGET}
                WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE output ERROR_VARIABLE errors RESULT_VARIABLE rc)
string(STRIP "${output}" output)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ephc ${command} --target=${RUN_TARGET} exited with ${rc}:\n${output}\n${errors}")
endif()
if(NOT output STREQUAL expected)
  message(FATAL_ERROR "ephc ${command} --target=${RUN_TARGET} printed\n  ${output}\nexpected\n  ${expected}\n${errors}")
endif()
message("ok: ${output}")
