# `cmake --install build --prefix P`: the ephc tool in P/bin, the libraries
# (static, as the build makes them) in P/lib, the headers in P/include/ephc
# with their paths from the source tree ("ir/IR.h"), and the CMake package
# (cmake/ephcConfig.cmake.in) in P/lib/cmake/ephc.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(EPH_INSTALL_TARGETS eph_ir eph_passes eph_ephapax_check eph_ephapax eph_value eph_frontends eph_runtime)
set(EPH_INSTALL_HEADER_DIRS ir passes frontends runtime)
set(EPH_PKG_HAVE_LLVM OFF)
set(EPH_PKG_HAVE_VULKAN OFF)
if(TARGET eph_spirv)
  list(APPEND EPH_INSTALL_TARGETS eph_spirv)
  list(APPEND EPH_INSTALL_HEADER_DIRS targets/spirv)
  set(EPH_PKG_HAVE_VULKAN ON)
  set(EPH_PKG_SPIRV_TOOLS_DIR "${SPIRV-Tools_DIR}")
  set(EPH_PKG_SPIRV_TOOLS_OPT_DIR "${SPIRV-Tools-opt_DIR}")
endif()
list(APPEND EPH_INSTALL_TARGETS eph_value_solve eph_value_run)
set(EPH_PKG_HAVE_ONNX OFF)
if(TARGET eph_onnx)
  # The ONNX frontend (registered in ephc::frontends) and the tensor frontend under it.
  list(APPEND EPH_INSTALL_TARGETS eph_tensor eph_onnx)
  set(EPH_PKG_HAVE_ONNX ON)
endif()
if(TARGET eph_llvm)
  list(APPEND EPH_INSTALL_TARGETS eph_llvm)
  list(APPEND EPH_INSTALL_HEADER_DIRS targets/llvm)
  set(EPH_PKG_HAVE_LLVM ON)
endif()

# ephc::ir, ephc::runtime, ...: the names without the eph_ prefix.
foreach(target ${EPH_INSTALL_TARGETS})
  string(REGEX REPLACE "^eph_" "" name ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
endforeach()
target_include_directories(eph_ir INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/ephc>)
target_compile_features(eph_ir INTERFACE cxx_std_20)
if(EPH_SANITIZE)
  # The libraries are instrumented: a program linking them needs the runtimes.
  target_link_options(eph_ir INTERFACE $<INSTALL_INTERFACE:-fsanitize=address,undefined>)
endif()
# The installed tool finds the shared libraries it was linked with (libLLVM).
set_target_properties(ephc PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)

install(TARGETS ${EPH_INSTALL_TARGETS} ephc EXPORT ephcTargets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
foreach(dir ${EPH_INSTALL_HEADER_DIRS})
  get_filename_component(parent ${dir} DIRECTORY)
  install(DIRECTORY ${dir} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ephc/${parent}
          FILES_MATCHING PATTERN "*.h" PATTERN "*.def" PATTERN "stdlib" EXCLUDE)
endforeach()

set(EPH_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ephc)
install(EXPORT ephcTargets NAMESPACE ephc:: DESTINATION ${EPH_CMAKE_DIR})
configure_package_config_file(cmake/ephcConfig.cmake.in ${CMAKE_BINARY_DIR}/ephcConfig.cmake
                              INSTALL_DESTINATION ${EPH_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/ephcConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/ephcConfig.cmake ${CMAKE_BINARY_DIR}/ephcConfigVersion.cmake
        DESTINATION ${EPH_CMAKE_DIR})
