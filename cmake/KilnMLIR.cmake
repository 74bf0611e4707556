# Finds LLVM/MLIR 19 from the Debian packages and offers kiln_link_mlir(),
# which links a target against the MLIR C API archives plus libMLIR/libLLVM.
# The C API archives are C++ underneath, so the final link uses the C++ linker.
find_package(MLIR REQUIRED CONFIG
  HINTS /usr/lib/llvm-19/lib/cmake/mlir /usr/lib/llvm-19/lib/cmake)
if(NOT LLVM_VERSION_MAJOR EQUAL 19)
  message(FATAL_ERROR "Kiln pins LLVM/MLIR 19 (IRDL syntax changed in 20); found ${LLVM_PACKAGE_VERSION}")
endif()
message(STATUS "Kiln: LLVM/MLIR ${LLVM_PACKAGE_VERSION} from ${MLIR_DIR}")
set(KILN_LLVM_TOOLS_DIR "${LLVM_TOOLS_BINARY_DIR}")

function(kiln_link_mlir target)
  target_include_directories(${target} SYSTEM PUBLIC ${MLIR_INCLUDE_DIRS} ${LLVM_INCLUDE_DIRS})
  target_link_libraries(${target} PUBLIC
    MLIRCAPIIR MLIRCAPIIRDL MLIRCAPIRegisterEverything MLIRCAPITransforms
    MLIRCAPIConversion MLIRCAPIExecutionEngine MLIRCAPILLVM MLIRCAPITarget
    MLIRCAPIFunc MLIRCAPISCF MLIRCAPIArith MLIRCAPIMath MLIRCAPIMemRef
    MLIRCAPITensor MLIRCAPINVVM MLIRCAPIGPU
    MLIR LLVM)
endfunction()

function(kiln_cxx_link target)
  set_target_properties(${target} PROPERTIES LINKER_LANGUAGE CXX)
endfunction()
