#!/usr/bin/env bash
# Sanitizer runs (docs/robustness.md).
#   tools/scripts/sanitize.sh asan   ASan+UBSan build (clang-19) in build-fuzz: the unit tests (label
#                                    unit: IR, passes, codegen, tuning, fuzz regression replays,
#                                    runtime allocation faults) and a slice of the integration
#                                    tests (bad_input, compile faults, the real models and the
#                                    CLI's artifacts against onnxruntime, the runtime's CPU tests).
#                                    Artifacts link an uninstrumented runtime (CMakeLists.txt).
#   tools/scripts/sanitize.sh tsan   TSan build of the runtime stub alone in build-tsan: its thread
#                                    pool tests (the CPU runtime tests, allocation faults, and
#                                    8 application threads with a model each).
#   tools/scripts/sanitize.sh smoke  asan, then a fuzz smoke of every harness (FUZZ_SECONDS, 20).
#   tools/scripts/sanitize.sh ci     asan, tsan, then the fuzz smoke (what tools/scripts/test.sh runs).
# The asan build also carries libFuzzer's coverage instrumentation (TGC_FUZZ), so that one build
# serves the sanitizer tests and tools/scripts/fuzz.sh. Exits non-zero on any report.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mode="${1:-asan}"
jobs="${JOBS:-2}"

run_asan() {
  local b="$root/build-fuzz"
  cmake -S "$root" -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-19 \
    -DCMAKE_CXX_COMPILER=clang++-19 -DTGC_FUZZ=ON -DTGC_SANITIZE=address,undefined >/dev/null
  # What the unit label and the slice need, not the benchmarks and the conformance runner.
  cmake --build "$b" -j "$jobs" --target tgc tgc_unit_tests tgc_codegen_tests tgc_tune_tests \
    rt_alloc_fail rt_concurrent_models rt_api_test rt_test_model_cpu rt_npytool rt_weights_so_test gguf_tokenize gguf_sample gguf_text_stream gguf_dequant \
    fuzz_npy fuzz_rt_npy fuzz_onnx fuzz_gguf fuzz_tune_cache fuzz_agent_reply
  # LLVM and protobuf keep a few allocations until exit; leaks of tgc's own show up in the
  # fuzzers (detect_leaks there) and in the runtime tests below.
  export ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:detect_stack_use_after_return=1"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  # One test makes tgc-agent crash on purpose (a candidate raising SIGSEGV) and expects a signal:
  # ASan would turn that into its own report and exit status 1, so that test runs with handle_segv=0.
  local crash_test='AgentClient.DropsCrashingHangingAndExitingCandidatesAndGoesOn'
  (cd "$b" && ctest --output-on-failure -j "$jobs" -L unit -E "^$crash_test\$")
  (cd "$b" && ASAN_OPTIONS="$ASAN_OPTIONS:handle_segv=0" ctest --output-on-failure -R "$crash_test")
  (cd "$b" && ASAN_OPTIONS="detect_leaks=1" ctest --output-on-failure -j "$jobs" \
    -R '^(bad_input|runtime_api|runtime_cli_cpu|runtime_weights_so|fault_alloc_runtime.*)$')
  # The compiler under ASan from model file to running artifact (the artifacts themselves are not
  # instrumented): every real model, the interpreter, the CLI's outputs and its fault paths.
  (cd "$b" && ctest --output-on-failure -j "$jobs" \
    -R '^(real_models_vs_onnxruntime|eval_vs_onnxruntime|compile_artifacts|fault_compile)$')
}

run_tsan() {
  local b="$root/build-tsan"
  # The runtime stub builds on its own (runtime-stub/CMakeLists.txt); the allocation fault test
  # comes along to run the pool's start-up failure paths under TSan too.
  cmake -S "$root/runtime-stub" -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-19 \
    -DCMAKE_C_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread \
    -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread >/dev/null
  cmake --build "$b" -j "$jobs" --target rt_api_test rt_test_model_cpu rt_npytool rt_weights_so_test
  clang-19 -std=c11 -O1 -g -fsanitize=thread -I"$root/runtime-stub/include" -I"$root/runtime-stub" -I"$root/runtime-stub/tests" \
    "$root/tests/faults/alloc_fail.c" "$root/runtime-stub/tests/model.c" "$b/runtime/$(uname -m)-linux-gnu/libtgc_runtime.a" \
    -Wl,--wrap=malloc -Wl,--wrap=calloc -Wl,--wrap=realloc -Wl,--wrap=posix_memalign -lpthread -ldl -lm \
    -o "$b/rt_alloc_fail"
  clang-19 -std=c11 -O1 -g -fsanitize=thread -I"$root/runtime-stub/include" -I"$root/runtime-stub" -I"$root/runtime-stub/tests" \
    "$root/tests/faults/concurrent_models.c" "$root/runtime-stub/tests/model.c" \
    "$b/runtime/$(uname -m)-linux-gnu/libtgc_runtime.a" -lpthread -ldl -lm -o "$b/rt_concurrent_models"
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
  (cd "$b" && ctest --output-on-failure -j "$jobs" -R '^(runtime_api|runtime_cli_cpu|runtime_weights_so)$')
  for t in 1 2 4; do "$b/rt_alloc_fail" "$t"; done
  "$b/rt_concurrent_models" 8
}

case "$mode" in
  asan) run_asan ;;
  tsan) run_tsan ;;
  smoke) run_asan; "$root/tools/scripts/fuzz.sh" --build "$root/build-fuzz" --time "${FUZZ_SECONDS:-20}" ;;
  ci) run_asan; run_tsan; "$root/tools/scripts/fuzz.sh" --build "$root/build-fuzz" --time "${FUZZ_SECONDS:-20}" ;;
  *) echo "sanitize.sh: unknown mode '$mode' (asan, tsan, smoke or ci)" >&2; exit 1 ;;
esac
