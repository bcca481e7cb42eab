#!/bin/sh
# A program links only its own backend: the description points at one backend table, and with
# -Wl,--gc-sections nothing else pulls another backend's file out of libtgc_runtime.a.
#   link_check.sh NM CPU_PROGRAM OPENCL_PROGRAM
set -u
NM=$1 CPU=$2 CL=$3
FAILS=0
fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }

# has PROGRAM PATTERN: does the program's symbol table hold a symbol matching PATTERN?
has() { "$NM" "$1" | grep -Eq -- "$2"; }

has "$CPU" ' tgc_backend_cpu$' || fail "$CPU: no tgc_backend_cpu (is the check looking at the right symbols?)"
for pat in ' tgc_backend_opencl$' ' tgc_cl_' 'clCreate'; do
  has "$CPU" "$pat" && fail "$CPU: the CPU program links OpenCL code: $("$NM" "$CPU" | grep -E -- "$pat" | head -n 3 | tr '\n' ' ')"
done
# the names cl_api.c looks up with dlsym are strings, not symbols
grep -aq clCreateProgramWithSource "$CPU" && fail "$CPU: holds the OpenCL API's function names"

has "$CL" ' tgc_backend_opencl$' || fail "$CL: no tgc_backend_opencl"
for pat in ' tgc_backend_cpu$' ' tgc_pool_'; do
  has "$CL" "$pat" && fail "$CL: the OpenCL program links the CPU backend: $("$NM" "$CL" | grep -E -- "$pat" | head -n 3 | tr '\n' ' ')"
done

if [ "$FAILS" -ne 0 ]; then
  echo "$FAILS link check(s) failed" >&2
  exit 1
fi
echo "ok: the CPU program holds no OpenCL code, the OpenCL program no CPU backend"
