// What an OpenCL launch costs on the device's driver: host time per clEnqueueNDRangeKernel by
// kernel arguments (one pointer, eight pointers, the pool and seven integers, four images), with
// and without a local size, a profiling queue, an out-of-order queue, two host threads on two
// queues; and GPU time per back-to-back kernel (launches queued behind a long kernel, event
// timestamps). The numbers behind the OpenCL runtime's pool and defined offsets
// (runtime-stub/backends/opencl/opencl.c, docs/performance-gpu.md). Not built by CMake: build it
// here and carry it to the GPU machine,
//
//   gcc -O2 -Wno-deprecated-declarations tools/bench/cl_launch_cost.c -o cl_launch_cost -l:libOpenCL.so.1 -lpthread
//   SPIN=20000000 N=2000 ./cl_launch_cost      (N launches per case; SPIN: the blocker's loop count)
//
// It takes the first GPU of any platform, else the first device.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
#define CK(x)                              \
  do {                                     \
    cl_int e_ = (x);                       \
    if (e_) {                              \
      fprintf(stderr, "%s: %d\n", #x, e_); \
      exit(1);                             \
    }                                      \
  } while (0)
static const char* src =
    "kernel void k1(global float* a) { if (get_global_id(0) == 0) a[0] += 1.0f; }\n"
    "kernel void k8(global float* a, global float* b, global float* c, global float* d, global float* e, global float* "
    "f, global float* g, global float* h) { if (get_global_id(0) == 0) a[0] += b[0]+c[0]+d[0]+e[0]+f[0]+g[0]+h[0]; }\n"
    "kernel void kp(global float* a, ulong o1, ulong o2, ulong o3, ulong o4, ulong o5, ulong o6, ulong o7) { if "
    "(get_global_id(0) == 0) a[o1] += a[o2]+a[o3]+a[o4]+a[o5]+a[o6]+a[o7]; }\n"
    "kernel void ki(global float* a, read_only image2d_t i1, read_only image2d_t i2, read_only image2d_t i3, read_only "
    "image2d_t i4) { const sampler_t s = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_NONE | CLK_FILTER_NEAREST; if "
    "(get_global_id(0) == 0) a[0] += read_imagef(i1, s, (int2)(0,0)).x + read_imagef(i2, s, (int2)(0,0)).x + "
    "read_imagef(i3, s, (int2)(0,0)).x + read_imagef(i4, s, (int2)(0,0)).x; }\n"
    "kernel void spin(global float* a, int n) { float x = a[1]; for (int i = 0; i < n; ++i) x = x * 1.0000001f + "
    "1e-7f; if (get_global_id(0) == 0) a[2] = x; }\n";
static cl_context ctx;
static cl_device_id dev;
static cl_program prog;
static cl_mem buf[8], img[4];
static cl_kernel mk(const char* name, int nb, int nimg, int noff) {
  cl_int e;
  cl_kernel k = clCreateKernel(prog, name, &e);
  CK(e);
  int a = 0;
  for (int i = 0; i < nb; ++i) CK(clSetKernelArg(k, a++, sizeof(cl_mem), &buf[i]));
  for (int i = 0; i < nimg; ++i) CK(clSetKernelArg(k, a++, sizeof(cl_mem), &img[i]));
  for (int i = 0; i < noff; ++i) {
    cl_ulong o = 4 + i;
    CK(clSetKernelArg(k, a++, sizeof o, &o));
  }
  return k;
}
// host us per enqueue, and total us per kernel once finished
static void bench(const char* label, cl_command_queue q, cl_kernel k, size_t global, size_t* local, int n,
                  cl_kernel blocker) {
  for (int r = 0; r < 3; ++r) {
    if (blocker) {
      size_t g = 1, l = 1;
      CK(clEnqueueNDRangeKernel(q, blocker, 1, NULL, &g, &l, 0, NULL, NULL));
      CK(clFlush(q));
    }
    double t0 = now();
    for (int i = 0; i < n; ++i) CK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, local, 0, NULL, NULL));
    double t1 = now();
    CK(clFinish(q));
    double t2 = now();
    printf("%-34s enqueue %.2f us/launch, enqueue+finish %.2f us/launch, drain after enqueue %.1f us\n", label,
           (t1 - t0) / n, (t2 - t0) / n, t2 - t1);
  }
}
struct th {
  cl_command_queue q;
  cl_kernel k;
  int n;
  double us;
};
static void* thr(void* p) {
  struct th* t = p;
  size_t g = 256, l = 256;
  double t0 = now();
  for (int i = 0; i < t->n; ++i) CK(clEnqueueNDRangeKernel(t->q, t->k, 1, NULL, &g, &l, 0, NULL, NULL));
  t->us = now() - t0;
  return NULL;
}
int main(void) {
  cl_platform_id ps[8];
  cl_uint np = 0;
  CK(clGetPlatformIDs(8, ps, &np));
  int found = 0;
  for (cl_uint i = 0; i < np && !found; ++i)
    found = clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_GPU, 1, &dev, NULL) == CL_SUCCESS;
  if (!found) CK(clGetDeviceIDs(ps[0], CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
  char name[256];
  clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof name, name, NULL);
  printf("device %s\n", name);
  cl_int e;
  ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
  CK(e);
  cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &e);
  CK(e);
  prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &e);
  CK(e);
  CK(clBuildProgram(prog, 1, &dev, "", NULL, NULL));
  for (int i = 0; i < 8; ++i) {
    buf[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 1 << 20, NULL, &e);
    CK(e);
  }
  cl_image_format f = {CL_RGBA, CL_FLOAT};
  for (int i = 0; i < 4; ++i) {
    img[i] = clCreateImage2D(ctx, CL_MEM_READ_ONLY, &f, 64, 64, 0, NULL, &e);
    CK(e);
  }
  size_t l256 = 256;
  cl_kernel k1 = mk("k1", 1, 0, 0), k8 = mk("k8", 8, 0, 0), kp = mk("kp", 1, 0, 7), ki = mk("ki", 1, 4, 0),
            spin = mk("spin", 1, 0, 0);
  int iters = getenv("SPIN") ? atoi(getenv("SPIN")) : 2000000;
  CK(clSetKernelArg(spin, 1, sizeof iters, &iters));
  int n = getenv("N") ? atoi(getenv("N")) : 2000;
  bench("1 buffer, 256 threads", q, k1, 256, &l256, n, NULL);
  bench("1 buffer, local NULL", q, k1, 256, NULL, n, NULL);
  bench("1 buffer, 25600 threads", q, k1, 25600, &l256, n, NULL);
  bench("8 buffers", q, k8, 256, &l256, n, NULL);
  bench("pool + 7 offsets", q, kp, 256, &l256, n, NULL);
  bench("1 buffer + 4 images", q, ki, 256, &l256, n, NULL);
  bench("1 buffer, behind a blocker (GPU/kernel)", q, k1, 256, &l256, n, spin);
  bench("pool+7, behind a blocker", q, kp, 256, &l256, n, spin);

  { /* GPU-side cost of back-to-back kernels: N launches queued behind a blocker, event timestamps */
    cl_command_queue qq = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &e);
    CK(e);
    int m = 200;
    cl_event* ev = calloc(m, sizeof(cl_event));
    size_t sizes[3] = {256, 25600, 262144};
    for (int sz = 0; sz < 3; ++sz)
      for (int r = 0; r < 2; ++r) {
        size_t g = 1, l = 1;
        CK(clEnqueueNDRangeKernel(qq, spin, 1, NULL, &g, &l, 0, NULL, NULL));
        CK(clFlush(qq));
        double t0 = now();
        for (int i = 0; i < m; ++i) CK(clEnqueueNDRangeKernel(qq, kp, 1, NULL, &sizes[sz], &l256, 0, NULL, &ev[i]));
        double t1 = now();
        CK(clFinish(qq));
        cl_ulong s0, e0, sl, el, busy = 0;
        clGetEventProfilingInfo(ev[0], CL_PROFILING_COMMAND_START, sizeof s0, &s0, NULL);
        clGetEventProfilingInfo(ev[m - 1], CL_PROFILING_COMMAND_END, sizeof el, &el, NULL);
        for (int i = 0; i < m; ++i) {
          cl_ulong a, b;
          clGetEventProfilingInfo(ev[i], CL_PROFILING_COMMAND_START, sizeof a, &a, NULL);
          clGetEventProfilingInfo(ev[i], CL_PROFILING_COMMAND_END, sizeof b, &b, NULL);
          busy += b - a;
          clReleaseEvent(ev[i]);
        }
        (void)e0;
        (void)sl;
        printf(
            "queued behind a blocker, %zu threads: enqueue %.2f us each; GPU %.2f us per kernel start to start, %.2f "
            "us inside each\n",
            sizes[sz], (t1 - t0) / m, (el - s0) / 1e3 / m, busy / 1e3 / m);
      }
  }
  cl_command_queue qp = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &e);
  CK(e);
  bench("1 buffer, profiling queue", qp, k1, 256, &l256, n, NULL);
  cl_command_queue qo = clCreateCommandQueue(ctx, dev, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, &e);
  if (qo) bench("1 buffer, out-of-order queue", qo, k1, 256, &l256, n, NULL);
  // two host threads, two queues
  cl_command_queue q2 = clCreateCommandQueue(ctx, dev, 0, &e);
  CK(e);
  cl_kernel k1b = mk("k1", 1, 0, 0);
  for (int r = 0; r < 3; ++r) {
    struct th a = {q, k1, n}, b = {q2, k1b, n};
    pthread_t ta, tb;
    double t0 = now();
    pthread_create(&ta, NULL, thr, &a);
    pthread_create(&tb, NULL, thr, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    double t1 = now();
    clFinish(q);
    clFinish(q2);
    printf("two threads, two queues: %.2f / %.2f us per enqueue per thread, %.2f us per launch overall\n", a.us / n,
           b.us / n, (t1 - t0) / (2 * n));
  }
  return 0;
}
