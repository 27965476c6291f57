#include "../test_kernels.inc"
