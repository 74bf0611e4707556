# find_package(Kiln): the installed libkilnrt as Kiln::kilnrt (static) and Kiln::kilnrt_shared,
# and kiln_add_kernel_library() for generated kernel libraries.
get_filename_component(_kiln_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
find_package(Threads REQUIRED)
if(NOT TARGET Kiln::kilnrt)
  add_library(Kiln::kilnrt STATIC IMPORTED)
  find_library(_kiln_rt_a NAMES libkilnrt.a PATHS "${_kiln_prefix}" PATH_SUFFIXES lib lib64 NO_DEFAULT_PATH)
  set_target_properties(Kiln::kilnrt PROPERTIES
    IMPORTED_LOCATION "${_kiln_rt_a}"
    INTERFACE_INCLUDE_DIRECTORIES "${_kiln_prefix}/include"
    INTERFACE_LINK_LIBRARIES "Threads::Threads;${CMAKE_DL_LIBS}")
  add_library(Kiln::kilnrt_shared SHARED IMPORTED)
  find_library(_kiln_rt_so NAMES kilnrt PATHS "${_kiln_prefix}" PATH_SUFFIXES lib lib64 NO_DEFAULT_PATH)
  set_target_properties(Kiln::kilnrt_shared PROPERTIES
    IMPORTED_LOCATION "${_kiln_rt_so}"
    INTERFACE_INCLUDE_DIRECTORIES "${_kiln_prefix}/include")
endif()
find_program(KILN_EXECUTABLE kiln HINTS "${_kiln_prefix}/bin")
include("${CMAKE_CURRENT_LIST_DIR}/KilnLibrary.cmake")
