# yoloplan-bench (cli/bench_main.c): bench-step without reports/, for bench/gpu_check.sh. Built in
# every full build too, so that CI sees it compile.
add_executable(yoloplan-bench ${CMAKE_CURRENT_LIST_DIR}/bench_main.c ${CMAKE_CURRENT_LIST_DIR}/cmd_bench_step.c
  ${CMAKE_CURRENT_LIST_DIR}/common.c ${CMAKE_CURRENT_LIST_DIR}/preflight.c ${CMAKE_CURRENT_LIST_DIR}/device.c)
target_include_directories(yoloplan-bench PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(yoloplan-bench PRIVATE yp_executor yp_planner yp_graph yp_models yp_kernels PkgConfig::CJSON ${MATH_LIB})
set_target_properties(yoloplan-bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR})
