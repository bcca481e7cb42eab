#!/usr/bin/env bash
# Names from the model file in error messages: a newline, a carriage return, an escape character
# or bytes that are not UTF-8 in an input, node or initializer name are escaped (\n, \xNN), so each
# error is one line "tgc: error: ..." with exit status 1 (docs/robustness.md).
# usage: name_faults.sh TGC_BINARY REPO_ROOT
set -uo pipefail
tgc="$1"; root="$2"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$root/tests/faults/make_name_models.py" "$work" || { echo "FAIL make_name_models.py"; exit 1; }
fail=0
expect_error() {  # description, expected substring, command...
  local what="$1" want="$2"; shift 2
  "$@" >"$work/stdout" 2>"$work/err"
  local rc=$? lines; lines=$(wc -l <"$work/err")
  if [ $rc -ne 1 ] || [ "$lines" -ne 1 ] || ! grep -q '^tgc: error: ' "$work/err" || ! grep -qF -- "$want" "$work/err" ||
     LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f\x80-\xff]' "$work/err"; then
    echo "FAIL $what: rc=$rc, $lines lines, stderr:"; cat -A "$work/err"; fail=1
  else
    echo "ok   $what: $(cat "$work/err")"
  fi
}
m="$work"
expect_error "input name with a newline, dims without sizes (compile)" "input 'im\\nage' dim 1 ('n')" \
  "$tgc" compile "$m/input_newline.onnx" -o "$work/a"
expect_error "the same, tgc inspect" "input 'im\\nage' dim 1 ('n')" "$tgc" inspect "$m/input_newline.onnx"
expect_error "input name with a newline, a string input" "input 'im\\nage': unsupported ONNX element type STRING" \
  "$tgc" compile "$m/input_newline_string.onnx" -o "$work/a"
expect_error "node name not UTF-8, unknown op" "node 'node\\xff\\xfe\\x1b1' (NoSuchOp, opset 13): unsupported op type" \
  "$tgc" compile "$m/node_bytes.onnx" -o "$work/a"
expect_error "missing input named with CR, tab, DEL" "node 'node\\xff\\xfe\\x1b1' (Add, opset 13): input 'w\\r\\t\\x7f' is not produced" \
  "$tgc" compile "$m/missing_input.onnx" -o "$work/a"
# Notes name dims from the file escaped too: each stays one line.
if "$tgc" compile "$m/dim_newline.onnx" --dynamic $'n\ndim=8' -o "$work/d" 2>"$work/err" &&
   grep -qF "tgc: dim 'n\\ndim' is bound at run time (1 to 8)" "$work/err" &&
   ! LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f\x80-\xff]' "$work/err"; then
  echo "ok   a dim's name in the compile's note: $(grep -F "n\\ndim" "$work/err")"
else
  echo "FAIL a dim's name in the compile's note:"; cat -A "$work/err"; fail=1
fi
# The file-safe spelling of the name still reaches the input, and the model compiles and runs.
if "$tgc" compile "$m/input_newline.onnx" --input-shape im_age=4,3 -o "$work/ok" 2>"$work/err" && "$work/ok" --info >/dev/null; then
  echo "ok   --input-shape im_age=4,3 compiles and runs"
else
  echo "FAIL --input-shape im_age=4,3:"; cat "$work/err"; fail=1
fi
# Such names in the --shared header's comment: escaped, and "*/" in them does not end it.
if "$tgc" compile "$m/header_names.onnx" --shared -o "$work/libnames.so" 2>"$work/err" &&
   cc -fsyntax-only -Werror -x c "$work/names.h" 2>>"$work/err" &&
   grep -qF "'in*\\/ int broken; /*'" "$work/names.h" && grep -qF "'o\\n*\\/\\xff'" "$work/names.h"; then
  echo "ok   names in the --shared header's comment"
else
  echo "FAIL names in the --shared header's comment:"; cat "$work/err"; grep -a "'" "$work/names.h" | head -5; fail=1
fi
exit $fail
