# tests/kernels.cmake - kernel tests (included by tests/CMakeLists.txt).

yp_add_test(test_kernels_silu LIBS yp_kernels ${MATH_LIB} LABELS unit)
# The kind table: device specs, instances from them, host_memory and scratch models per kind.
yp_add_test(test_backend_kind LIBS yp_kernels ${MATH_LIB} LABELS unit)
# The CPU op table against PyTorch fixtures (tests/data/ops, from tests/ref/make_op_fixtures.py).
yp_add_test(test_cpu_ops LIBS yp_kernels ${MATH_LIB} LABELS unit)
yp_add_test(test_cpu_conv LIBS yp_kernels ${MATH_LIB} LABELS unit)
# The attention core against PyTorch (tests/data/attention, from tests/ref/make_attention_fixtures.py).
yp_add_test(test_cpu_attention LIBS yp_kernels ${MATH_LIB} LABELS unit)
yp_add_test(test_cpu_act LIBS yp_kernels ${MATH_LIB} LABELS unit)
# Grouped and depthwise convs (GhostConv, DWConv) against tests/data/ops/groups.* and double loops.
yp_add_test(test_cpu_conv_groups LIBS yp_kernels ${MATH_LIB} LABELS unit)
yp_add_test(test_cpu_conv_cross LIBS yp_kernels ${MATH_LIB} LABELS unit)
# The host+device element functions of the CUDA kernels (yp_index_math.h, yp_bn_math.h) run on
# the host against the CPU backend: needs no GPU, built with or without CUDA.
yp_add_test(test_kernels_index LIBS yp_kernels ${MATH_LIB} LABELS unit)
yp_add_test(test_elem_math LIBS yp_kernels ${MATH_LIB} LABELS unit)
if(YP_HAVE_CUDA)
  # Skips itself (exit 77) on machines without a driver or GPU, such as CI.
  yp_add_test(test_cuda_silu LIBS yp_kernels ${MATH_LIB} LABELS gpu)
  yp_add_test(test_cuda_conv LIBS yp_kernels ${MATH_LIB} LABELS gpu)
  # Data movement, BatchNorm and optimizer ops against the CPU backend; skips the same way.
  yp_add_test(test_cuda_ops LIBS yp_kernels ${MATH_LIB} LABELS gpu)
  # Attention against the CPU backend's (test_cpu_attention checks that one against PyTorch).
  yp_add_test(test_cuda_attention LIBS yp_kernels ${MATH_LIB} LABELS gpu)
  # BatchNorm, loss_level and detect_decode in fp16 and bf16 against the CPU's fp32 on the same
  # (rounded) inputs; skips the same way.
  yp_add_test(test_cuda_lowp_norm LIBS yp_kernels ${MATH_LIB} LABELS gpu)
  # F16/BF16 storage of the data-movement, activation and attention ops against the CPU's fp32
  # result on the same inputs, rounded to the type; skips the same way.
  yp_add_test(test_cuda_lowp LIBS yp_kernels ${MATH_LIB} LABELS gpu)
  # The convolutions with fp16/bf16 data (fp32 masters' gradients) and the cast entry; skips so too.
  yp_add_test(test_cuda_lowp_conv LIBS yp_kernels ${MATH_LIB} LABELS gpu)
endif()

