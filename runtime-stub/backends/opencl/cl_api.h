/* The few OpenCL 1.2 declarations tgc needs, written out so nothing needs CL headers (the aarch64
 * sysroot has none), and libOpenCL loaded with dlopen (never linked), so a binary that does not
 * use OpenCL runs without it. Shared by the runtime (opencl.c) and tgc-agent, which must time
 * kernels on the device the runtime would pick. */
#ifndef TGC_CL_API_H
#define TGC_CL_API_H
#include <stddef.h>
#include <stdint.h>

typedef int32_t cl_int;
typedef uint32_t cl_uint;
typedef uint64_t cl_ulong;
typedef uint64_t cl_bitfield;
typedef cl_bitfield cl_device_type;
typedef cl_bitfield cl_mem_flags;
typedef cl_bitfield cl_command_queue_properties;
typedef cl_bitfield cl_map_flags;
typedef intptr_t cl_context_properties;
typedef cl_uint cl_device_info, cl_program_info, cl_program_build_info, cl_buffer_create_type, cl_bool;
typedef struct _cl_platform_id* cl_platform_id;
typedef struct _cl_device_id* cl_device_id;
typedef struct _cl_context* cl_context;
typedef struct _cl_command_queue* cl_command_queue;
typedef struct _cl_mem* cl_mem;
typedef struct _cl_program* cl_program;
typedef struct _cl_kernel* cl_kernel;
typedef struct _cl_event* cl_event;
typedef struct {
  size_t origin, size;
} cl_buffer_region;
typedef struct {
  cl_uint image_channel_order, image_channel_data_type;
} cl_image_format;
typedef struct {
  cl_uint image_type;
  size_t image_width, image_height, image_depth, image_array_size, image_row_pitch, image_slice_pitch;
  cl_uint num_mip_levels, num_samples;
  cl_mem buffer;
} cl_image_desc;

#define CL_SUCCESS 0
#define CL_FALSE 0
#define CL_TRUE 1
#define CL_DEVICE_TYPE_GPU (1 << 2)
#define CL_DEVICE_TYPE_ALL 0xFFFFFFFF
#define CL_DEVICE_IMAGE2D_MAX_WIDTH 0x1011
#define CL_DEVICE_IMAGE2D_MAX_HEIGHT 0x1012
#define CL_DEVICE_IMAGE_SUPPORT 0x1016
#define CL_DEVICE_MAX_MEM_ALLOC_SIZE 0x1010
#define CL_DEVICE_MEM_BASE_ADDR_ALIGN 0x1019
#define CL_DEVICE_GLOBAL_MEM_SIZE 0x101F
#define CL_DEVICE_NAME 0x102B
#define CL_DRIVER_VERSION 0x102D
#define CL_DEVICE_VERSION 0x102F
#define CL_CONTEXT_PLATFORM 0x1084
#define CL_MEM_READ_WRITE (1 << 0)
#define CL_MEM_READ_ONLY (1 << 2)
#define CL_MEM_ALLOC_HOST_PTR (1 << 4)
#define CL_MEM_COPY_HOST_PTR (1 << 5)
#define CL_RGBA 0x10B5
#define CL_HALF_FLOAT 0x10DD
#define CL_FLOAT 0x10DE
#define CL_MEM_OBJECT_IMAGE2D 0x10F1
#define CL_PROGRAM_BINARY_SIZES 0x1165
#define CL_PROGRAM_BINARIES 0x1166
#define CL_PROGRAM_BUILD_LOG 0x1183
#define CL_BUFFER_CREATE_TYPE_REGION 0x1220
#define CL_QUEUE_PROFILING_ENABLE (1 << 1)
#define CL_MAP_READ (1 << 0)
#define CL_MAP_WRITE (1 << 1)
#define CL_PROFILING_COMMAND_START 0x1282
#define CL_PROFILING_COMMAND_END 0x1283
#define CL_KERNEL_WORK_GROUP_SIZE 0x11B0

#define CL_FUNCS(X)                                                                                                  \
  X(cl_int, clGetPlatformIDs, (cl_uint, cl_platform_id*, cl_uint*))                                                  \
  X(cl_int, clGetDeviceIDs, (cl_platform_id, cl_device_type, cl_uint, cl_device_id*, cl_uint*))                      \
  X(cl_int, clGetDeviceInfo, (cl_device_id, cl_device_info, size_t, void*, size_t*))                                 \
  X(cl_context, clCreateContext,                                                                                     \
    (const cl_context_properties*, cl_uint, const cl_device_id*, void (*)(const char*, const void*, size_t, void*),  \
     void*, cl_int*))                                                                                                \
  X(cl_command_queue, clCreateCommandQueue, (cl_context, cl_device_id, cl_command_queue_properties, cl_int*))        \
  X(cl_mem, clCreateBuffer, (cl_context, cl_mem_flags, size_t, void*, cl_int*))                                      \
  X(cl_mem, clCreateSubBuffer, (cl_mem, cl_mem_flags, cl_buffer_create_type, const void*, cl_int*))                  \
  X(cl_mem, clCreateImage, (cl_context, cl_mem_flags, const cl_image_format*, const cl_image_desc*, void*, cl_int*)) \
  X(cl_program, clCreateProgramWithSource, (cl_context, cl_uint, const char**, const size_t*, cl_int*))              \
  X(cl_program, clCreateProgramWithBinary,                                                                           \
    (cl_context, cl_uint, const cl_device_id*, const size_t*, const unsigned char**, cl_int*, cl_int*))              \
  X(cl_int, clBuildProgram,                                                                                          \
    (cl_program, cl_uint, const cl_device_id*, const char*, void (*)(cl_program, void*), void*))                     \
  X(cl_int, clGetProgramBuildInfo, (cl_program, cl_device_id, cl_program_build_info, size_t, void*, size_t*))        \
  X(cl_int, clGetProgramInfo, (cl_program, cl_program_info, size_t, void*, size_t*))                                 \
  X(cl_kernel, clCreateKernel, (cl_program, const char*, cl_int*))                                                   \
  X(cl_int, clSetKernelArg, (cl_kernel, cl_uint, size_t, const void*))                                               \
  X(cl_int, clEnqueueNDRangeKernel,                                                                                  \
    (cl_command_queue, cl_kernel, cl_uint, const size_t*, const size_t*, const size_t*, cl_uint, const cl_event*,    \
     cl_event*))                                                                                                     \
  X(cl_int, clEnqueueWriteBuffer,                                                                                    \
    (cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void*, cl_uint, const cl_event*, cl_event*))           \
  X(cl_int, clEnqueueReadBuffer,                                                                                     \
    (cl_command_queue, cl_mem, cl_bool, size_t, size_t, void*, cl_uint, const cl_event*, cl_event*))                 \
  X(void*, clEnqueueMapBuffer,                                                                                       \
    (cl_command_queue, cl_mem, cl_bool, cl_map_flags, size_t, size_t, cl_uint, const cl_event*, cl_event*, cl_int*)) \
  X(cl_int, clEnqueueUnmapMemObject, (cl_command_queue, cl_mem, void*, cl_uint, const cl_event*, cl_event*))         \
  X(cl_int, clFinish, (cl_command_queue))                                                                            \
  X(cl_int, clReleaseMemObject, (cl_mem))                                                                            \
  X(cl_int, clReleaseKernel, (cl_kernel))                                                                            \
  X(cl_int, clReleaseProgram, (cl_program))                                                                          \
  X(cl_int, clReleaseCommandQueue, (cl_command_queue))                                                               \
  X(cl_int, clReleaseContext, (cl_context))                                                                          \
  X(cl_int, clGetKernelWorkGroupInfo, (cl_kernel, cl_device_id, cl_uint, size_t, void*, size_t*))                    \
  X(cl_int, clGetEventProfilingInfo, (cl_event, cl_uint, size_t, void*, size_t*))                                    \
  X(cl_int, clReleaseEvent, (cl_event))

typedef struct {
  void* lib;
#define X(ret, name, args) ret(*name) args;
  CL_FUNCS(X)
#undef X
} cl_api;

/* Loads libOpenCL and every function above; 0, or -1 with the reason in `why`. */
int tgc_cl_api_load(cl_api* a, char* why, size_t cap);
/* The device the runtime runs on: the first GPU, else the first device of any type. 0, or -1
 * with the reason in `why`. */
int tgc_cl_api_pick_device(const cl_api* a, cl_platform_id* platform, cl_device_id* device, char* why, size_t cap);
/* The name of an OpenCL error code ("CL_OUT_OF_RESOURCES"). */
const char* tgc_cl_err(cl_int e);

#endif
