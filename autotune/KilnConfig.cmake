# find_package(Kiln): the installed Kiln as imported targets, written by install(EXPORT) in
# autotune/CMakeLists.txt (KilnTargets.cmake finds the prefix from where it is installed):
#   Kiln::kilnrt         libkilnrt.a; its users link pthreads, libdl and libm and export the
#                        emulator's symbols (lib/kiln/emu_exports.list, runtime/emu_device.c)
#   Kiln::kilnrt_shared  libkilnrt.so
#   Kiln::kiln           the `kiln` command (absent from a KILN_RUNTIME_ONLY install);
#                        KILN_EXECUTABLE is its path
# and kiln_add_kernel_library() for generated kernel libraries (KilnLibrary.cmake).
include(CMakeFindDependencyMacro)
find_dependency(Threads)
include("${CMAKE_CURRENT_LIST_DIR}/KilnTargets.cmake")
if(TARGET Kiln::kiln)
  get_target_property(KILN_EXECUTABLE Kiln::kiln LOCATION)
endif()
include("${CMAKE_CURRENT_LIST_DIR}/KilnLibrary.cmake")
