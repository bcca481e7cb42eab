// Renders a loop program as OpenCL C 1.2 (the qcom target): the GPU lowering
// (codegen/gpu/gpu_lowering.h) printed in OpenCL C's spellings. f16 buffers go through
// vload_half/vstore_half so the kernels also build on devices without cl_khr_fp16 (pocl in CI); a
// kernel that computes in half (passes/precision.h compute_in_half) does so where the device has
// cl_khr_fp16 and in float elsewhere, from one source.
//
// Each kernel has several signatures, chosen when the runtime builds it: one argument per buffer
// (a pointer, or an image2d_t for an image); or, with -DTGC_POOL, one pool holding every buffer
// but the images, each at the byte offset that the build defines as `bN_at` (-Db0_at=...); with
// -DTGC_NO_IMAGES as well (a device without images), the images too, read as 4-vectors. NVIDIA's
// driver spends host time in each enqueue on each argument (0.6 us a pointer, 1.3 an image, 0.2
// an integer; 4.7 for the launch itself; docs/performance-gpu.md).
#pragma once
#include <cstdint>
#include <string>

#include "codegen/gpu/gpu_lowering.h"

namespace tgc {

// Threads per work-group of a kernel without local ranges: its launch names the size (NVIDIA's
// driver spends ~4 us of host time choosing one when it is left to the driver) and pads the
// global size to a multiple of it; the padding threads return at once.
constexpr int64_t kOpenClFlatGroupSize = 64;

// The launch of p: threads per work-group, and in all (a multiple of the first).
struct OpenClLaunch {
  int64_t local, global;
};
OpenClLaunch opencl_launch(const LoopProgram& p);

// Throws tgc::Error where o.index_bits is 32 and the kernel does not fit (see lower_gpu).
std::string render_opencl(const Graph& g, const LoopProgram& p, const GpuOptions& o = {});
// A serial launch (passes/serial_launches.h): `stages` in one work-group of `group` threads.
std::string render_opencl_serial(const Graph& g, const std::vector<const LoopProgram*>& stages, const std::string& name,
                                 int64_t group, const GpuOptions& o = {});

}  // namespace tgc
