/* The CPU features a CPU artifact can require beyond its architecture's baseline (x86-64: SSE2;
 * aarch64: NEON), named as LLVM names them. The compiler (codegen/llvm/target.cpp) lists those its
 * target machine enables in the model description (tgc_model_desc.cpu_features); the runtime
 * (core/cpu_check.c) asks the CPU for each before any kernel runs. One table, so that the two agree.
 *
 * Listed: the features LLVM selects instructions for from plain IR (arithmetic, vector ops,
 * conversions, bit counts, shuffles), and so may put into kernels; cx16 too, as x86-64-v2 names it.
 * Left out: those reached only through intrinsics, which tgc's kernels do not call (aes, pclmul,
 * vaes, vpclmulqdq, sha, crc32, rdrnd, rdseed, adx, amx-*, avx512vp2intersect, the avxvnniint8/16
 * and avxifma dot products; aarch64's crypto, crc, jsconv), or only through atomics, which kernels
 * hold none of (aarch64's lse, rcpc), and features of the system rather than of code (xsave, sgx,
 * pku, ...). */
#ifndef TGC_CPU_FEATURES_H
#define TGC_CPU_FEATURES_H

/* x86-64: X(name, cpuid leaf, subleaf, register (0 eax, 1 ebx, 2 ecx, 3 edx), bit, state) where
 * state is the register state the OS must save (XCR0, read by xgetbv): 0 none, 1 the AVX (ymm)
 * state, 2 the AVX-512 (zmm, opmask) state too. */
#define TGC_X86_CPU_FEATURES(X)        \
  X("sse3", 1, 0, 2, 0, 0)             \
  X("ssse3", 1, 0, 2, 9, 0)            \
  X("sse4.1", 1, 0, 2, 19, 0)          \
  X("sse4.2", 1, 0, 2, 20, 0)          \
  X("cx16", 1, 0, 2, 13, 0)            \
  X("popcnt", 1, 0, 2, 23, 0)          \
  X("movbe", 1, 0, 2, 22, 0)           \
  X("fma", 1, 0, 2, 12, 1)             \
  X("avx", 1, 0, 2, 28, 1)             \
  X("f16c", 1, 0, 2, 29, 1)            \
  X("sahf", 0x80000001, 0, 2, 0, 0)    \
  X("lzcnt", 0x80000001, 0, 2, 5, 0)   \
  X("sse4a", 0x80000001, 0, 2, 6, 0)   \
  X("xop", 0x80000001, 0, 2, 11, 1)    \
  X("fma4", 0x80000001, 0, 2, 16, 1)   \
  X("tbm", 0x80000001, 0, 2, 21, 0)    \
  X("bmi", 7, 0, 1, 3, 0)              \
  X("avx2", 7, 0, 1, 5, 1)             \
  X("bmi2", 7, 0, 1, 8, 0)             \
  X("avx512f", 7, 0, 1, 16, 2)         \
  X("avx512dq", 7, 0, 1, 17, 2)        \
  X("avx512ifma", 7, 0, 1, 21, 2)      \
  X("avx512cd", 7, 0, 1, 28, 2)        \
  X("avx512bw", 7, 0, 1, 30, 2)        \
  X("avx512vl", 7, 0, 1, 31, 2)        \
  X("avx512vbmi", 7, 0, 2, 1, 2)       \
  X("avx512vbmi2", 7, 0, 2, 6, 2)      \
  X("gfni", 7, 0, 2, 8, 0)             \
  X("avx512vnni", 7, 0, 2, 11, 2)      \
  X("avx512bitalg", 7, 0, 2, 12, 2)    \
  X("avx512vpopcntdq", 7, 0, 2, 14, 2) \
  X("avx512fp16", 7, 0, 3, 23, 2)      \
  X("avxvnni", 7, 1, 0, 4, 1)          \
  X("avx512bf16", 7, 1, 0, 5, 2)       \
  X("avxneconvert", 7, 1, 3, 5, 1)

/* aarch64: X(name, hwcap word (1: AT_HWCAP, 2: AT_HWCAP2), bit); a name listed twice needs both bits. */
#define TGC_AARCH64_CPU_FEATURES(X) \
  X("fullfp16", 1, 9)               \
  X("fullfp16", 1, 10)              \
  X("rdm", 1, 12)                   \
  X("complxnum", 1, 14)             \
  X("dotprod", 1, 20)               \
  X("sve", 1, 22)                   \
  X("fp16fml", 1, 23)               \
  X("sve2", 2, 1)                   \
  X("fptoint", 2, 8)                \
  X("i8mm", 2, 13)                  \
  X("bf16", 2, 14)

#endif
