#!/usr/bin/env bash
# llama.cpp's CPU backend rebuilt from the reference's own source tree with GELU computed in f32
# (ggml_gelu_f32) instead of through its f16 table (GGML_GELU_FP16, on in every prebuilt build:
# GELU's input rounded to f16, its value read from a table of f16 values). The gemma tests compare
# tgc against llama.cpp with this backend: the same variant the prebuilt library picks on this
# CPU, the same flags, only GELU exact (docs/design-notes.md, the GGUF section, says why).
# usage: exact_gelu.sh REF   (REF: the reference setup, tools/gguf-ref/setup.sh's DEST)
# Writes REF/bins-exact-gelu: links to REF/bins's libraries but the CPU backends, and the rebuilt
# backend. Needs cmake and a C/C++ compiler; a few minutes on two cores. Does nothing when done.
set -euo pipefail
ref="$(cd "$1" && pwd)"
out="$ref/bins-exact-gelu" work="$ref/build-exact-gelu"
if compgen -G "$out/libggml-cpu-*.so" >/dev/null; then exit 0; fi
# The variant llama.cpp's loader picks here, from a run of the reference on its smallest vocab file.
variant=$("$ref/llama_logits" "$ref/llama.cpp/models/ggml-vocab-llama-spm.gguf" "$ref/bins" /dev/null --tokens 1 2>&1 |
  sed -n 's#.*loaded CPU backend from .*/libggml-cpu-\(.*\)\.so.*#\1#p' | head -1) || true
[ -n "$variant" ] || { echo "exact_gelu.sh: cannot tell which CPU backend llama.cpp loads here" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work"
cp -r "$ref/llama.cpp/ggml" "$work/ggml"
vec="$work/ggml/src/ggml-cpu/vec.h"
grep -qx '#define GGML_GELU_FP16' "$vec" || { echo "exact_gelu.sh: no GGML_GELU_FP16 define in $vec" >&2; exit 1; }
sed -i 's|^#define GGML_GELU_FP16$|/* GGML_GELU_FP16 off: GELU in f32 */|' "$vec"
touch "$work/ggml/ggml.pc.in"  # the bundle leaves out what a standalone ggml build installs
# Unversioned libraries, as the prebuilt ones are: the backend must name libggml-base.so, the
# library the process has loaded, not libggml-base.so.0 (a second copy).
sed -i -e 's|^\( *\)VERSION ${GGML_VERSION}$|\1POSITION_INDEPENDENT_CODE ON|' -e '/SOVERSION ${GGML_VERSION_MAJOR}/d' \
  "$work/ggml/src/CMakeLists.txt"
cmake -S "$work/ggml" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_BACKEND_DL=ON \
  -DGGML_CPU_ALL_VARIANTS=ON -DGGML_NATIVE=OFF -DGGML_OPENMP=OFF \
  -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF >"$work/cmake.log" 2>&1 ||
  { echo "exact_gelu.sh: cmake failed, see $work/cmake.log" >&2; exit 1; }
cmake --build "$work/build" --target "ggml-cpu-$variant" -j "$(nproc)" >"$work/build.log" 2>&1 ||
  { echo "exact_gelu.sh: build failed, see $work/build.log" >&2; exit 1; }
built=$(find "$work/build" -name "libggml-cpu-$variant.so" | head -1)
mkdir -p "$out.tmp"
for f in "$ref/bins"/*; do
  case "$(basename "$f")" in libggml-cpu-*) ;; *) ln -sf "$f" "$out.tmp/" ;; esac
done
cp "$built" "$out.tmp/"
rm -rf "$out" && mv "$out.tmp" "$out" && rm -rf "$work"
echo "ok: $out (libggml-cpu-$variant.so with GELU in f32)"
