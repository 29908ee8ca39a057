# The libFuzzer targets of tests/fuzz: a project of their own, built with clang
# (libFuzzer is clang's) beside this gcc build, and a smoke run of each in ctest.
# Without clang (an image built with scripts/deps --build) they are left out.
find_program(EDGETRAIN_CLANGXX clang++)
if(NOT EDGETRAIN_CLANGXX)
  message(STATUS "clang++ not found: tests/fuzz is not built")
  return()
endif()
include(ExternalProject)
set(EDGETRAIN_FUZZ_DIR ${PROJECT_BINARY_DIR}/fuzz)
ExternalProject_Add(fuzzers
  SOURCE_DIR ${PROJECT_SOURCE_DIR}/tests/fuzz
  BINARY_DIR ${EDGETRAIN_FUZZ_DIR}
  CMAKE_ARGS -DCMAKE_CXX_COMPILER=${EDGETRAIN_CLANGXX} -DCMAKE_BUILD_TYPE=RelWithDebInfo
  BUILD_ALWAYS ON
  INSTALL_COMMAND "")
# Runs enough for each to pass its seeds and mutate them a while: 2-10 s here.
foreach(target row_push manifest cluster_profile bandwidth_trace watch_stream progress)
  add_test(NAME fuzz_${target}
           COMMAND ${PROJECT_SOURCE_DIR}/tests/fuzz/smoke.sh ${EDGETRAIN_FUZZ_DIR}/bin/${target}_fuzzer
                   ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/${target} 20000 ${EDGETRAIN_FUZZ_DIR}/crashes/${target})
  set_tests_properties(fuzz_${target} PROPERTIES LABELS fuzz TIMEOUT 120)
endforeach()
