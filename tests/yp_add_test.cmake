# tests/yp_add_test.cmake - yp_add_test(name [LIBS ...] [LABELS ...] [SOURCES ...]): one test
# executable from <name>.c in the calling folder (tests/<folder>/, mirroring the production
# folders), registered with ctest (exit 77 = skipped), with the shared helpers of tests/support/
# on its include path and the paths a test may read: the fixtures (YP_TEST_DATA), the bundled
# models and the yoloplan binary (empty in a YP_KERNELS_ONLY build, which has none). Included by
# tests/CMakeLists.txt and, for the kernels-only and GPU-bench builds, by the top-level CMakeLists.txt.
set(YP_TEST_DATA ${CMAKE_CURRENT_LIST_DIR}/data)
set(YP_TEST_SUPPORT ${CMAKE_CURRENT_LIST_DIR}/support)
set(YP_MODELS_DIR ${PROJECT_SOURCE_DIR}/models)

function(yp_add_test name)
  cmake_parse_arguments(T "" "" "LIBS;LABELS;SOURCES" ${ARGN})
  if(NOT T_SOURCES)
    set(T_SOURCES ${name}.c)
  endif()
  list(TRANSFORM T_SOURCES PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/ REGEX "^[^/]")
  add_executable(${name} ${T_SOURCES})
  target_include_directories(${name} PRIVATE ${YP_TEST_SUPPORT})
  target_link_libraries(${name} PRIVATE ${T_LIBS})
  target_compile_definitions(${name} PRIVATE
    YP_TEST_DATA="${YP_TEST_DATA}" YP_MODELS_DIR="${YP_MODELS_DIR}"
    YP_BINARY="$<$<TARGET_EXISTS:yoloplan>:$<TARGET_FILE:yoloplan>>")
  add_test(NAME ${name} COMMAND ${name})
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}" SKIP_RETURN_CODE 77)
endfunction()
