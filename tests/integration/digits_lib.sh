# Sourced by the artifact tests: the bundled digits model, its samples, and a check of an
# artifact's output directory against sample k's expected probabilities. Needs $root, $work and
# $fail set by the caller.
model="$root/models/digits_cnn.onnx"; samples="$root/models/digits_samples"
cmp="/usr/bin/python3 $root/tests/integration/compare_npy.py"

expect_probs() {  # dir k
  mkdir -p "$work/want$2"; cp "$samples/expected_probs_$2.npy" "$work/want$2/probs.npy"
  $cmp "$1" "$work/want$2" --rtol 1e-4 --atol 1e-6 || fail=1
}
