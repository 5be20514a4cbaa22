# Finds the CANN toolkit (Ascend ACL headers) where one is installed, to check kvio's own ACL
# declarations (native/src/ascend/acl_api.hpp) against the real acl/acl.h at build time. kvio
# never links against CANN: the kernel_ascend backend loads libascendcl.so at run time, so one
# build works with and without CANN. Looks in $ASCEND_HOME_PATH, $ASCEND_TOOLKIT_HOME, then
# /usr/local/Ascend/ascend-toolkit/latest. Sets CANN_FOUND and CANN_INCLUDE_DIR; when found,
# adds the object library kvio_acl_api_check (compiled with every build; it only compiles;
# KVIO_CHECK_ACL_API=OFF skips it, e.g. with a CANN older than 8.3.RC1, which lacks
# aclrtMemcpyBatchAsync).
find_path(CANN_INCLUDE_DIR acl/acl.h
  HINTS ENV ASCEND_HOME_PATH ENV ASCEND_TOOLKIT_HOME
  PATHS /usr/local/Ascend/ascend-toolkit/latest
  PATH_SUFFIXES include)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CANN REQUIRED_VARS CANN_INCLUDE_DIR)
option(KVIO_CHECK_ACL_API "Where CANN is found, check acl_api.hpp against acl/acl.h" ON)
if(CANN_FOUND AND KVIO_CHECK_ACL_API)
  message(STATUS "kvio: CANN headers at ${CANN_INCLUDE_DIR}: checking acl_api.hpp against them")
  add_library(kvio_acl_api_check OBJECT ${CMAKE_CURRENT_LIST_DIR}/../native/src/ascend/acl_api_check.cpp)
  target_include_directories(kvio_acl_api_check PRIVATE ${CANN_INCLUDE_DIR})
  add_dependencies(kvio kvio_acl_api_check)
else()
  message(STATUS "kvio: CANN not found - kernel_ascend still built (libascendcl.so loaded at run "
                 "time); declarations not checked against acl/acl.h")
endif()
