# The libFuzzer targets of tests/fuzz: a project of their own, built with clang
# (libFuzzer is clang's) beside this gcc build, and a smoke run of each in ctest.
# Without clang (an image built with scripts/deps --build) they are left out.
# Not part of `make build`: ctest builds them first (fuzz_build), alongside the
# other tests, so the cold build of the programs does not wait on them.
# The images' build context (.dockerignore) leaves tests out, and its build
# stage installs no clang: nothing of this there.
if(NOT EXISTS ${PROJECT_SOURCE_DIR}/tests/fuzz/CMakeLists.txt)
  return()
endif()
# Not cached, and named by its name below: no target of the gcc build uses it
# (images/test_images.py counts the tools a build's cache and commands name).
find_program(EDGETRAIN_CLANGXX clang++ NO_CACHE)
if(EDGETRAIN_CLANGXX)
  # clang without its libFuzzer runtime (libclang-rt-14-dev) would fail the
  # whole build at the first link: tried once here instead.
  set(_probe ${PROJECT_BINARY_DIR}/fuzz-probe)
  file(WRITE ${_probe}.cc "#include <cstddef>\n#include <cstdint>\n"
       "extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
  execute_process(COMMAND ${EDGETRAIN_CLANGXX} -fsanitize=fuzzer,address,undefined ${_probe}.cc -o ${_probe}
                  RESULT_VARIABLE _links OUTPUT_QUIET ERROR_QUIET)
endif()
if(NOT EDGETRAIN_CLANGXX OR NOT _links EQUAL 0)
  message(STATUS "clang++ with libFuzzer not found (scripts/deps installs it): tests/fuzz is not built")
  return()
endif()
include(ExternalProject)
set(EDGETRAIN_FUZZ_DIR ${PROJECT_BINARY_DIR}/fuzz)
ExternalProject_Add(fuzzers
  SOURCE_DIR ${PROJECT_SOURCE_DIR}/tests/fuzz
  BINARY_DIR ${EDGETRAIN_FUZZ_DIR}
  # Debug: the asserts stay in (NDEBUG would take them out); tests/fuzz sets -O1.
  CMAKE_ARGS -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug
  BUILD_ALWAYS ON
  EXCLUDE_FROM_ALL TRUE
  INSTALL_COMMAND "")
add_test(NAME fuzz_build COMMAND ${CMAKE_COMMAND} --build ${PROJECT_BINARY_DIR} --target fuzzers)
set_tests_properties(fuzz_build PROPERTIES FIXTURES_SETUP fuzzers LABELS fuzz TIMEOUT 900)
# Runs for each to pass its seeds and mutate them a while, about 1-8 s each
# here (the slow YAML targets get fewer): the same runs every time.
foreach(target_runs row_push:20000 manifest:10000 cluster_profile:4000 bandwidth_trace:20000 watch_stream:20000
                    progress:20000 archive_integrity:100000)
  string(REPLACE ":" ";" _pair ${target_runs})
  list(GET _pair 0 target)
  list(GET _pair 1 runs)
  add_test(NAME fuzz_${target}
           COMMAND ${PROJECT_SOURCE_DIR}/tests/fuzz/smoke.sh ${EDGETRAIN_FUZZ_DIR}/bin/${target}_fuzzer
                   ${PROJECT_SOURCE_DIR}/tests/fuzz/corpus/${target} ${runs} ${EDGETRAIN_FUZZ_DIR}/crashes/${target})
  set_tests_properties(fuzz_${target} PROPERTIES LABELS fuzz TIMEOUT 120 FIXTURES_REQUIRED fuzzers)
endforeach()
