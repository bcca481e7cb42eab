"""The command line both twin writers share (fp16_models.py, int8_models.py): OUT_DIR MODEL.onnx...;
each model converted, checked with onnx.checker and saved as OUT_DIR/<name>_<suffix>.onnx."""
import pathlib
import sys

import onnx


def write_twins(usage, suffix, convert):
    if len(sys.argv) < 3:
        sys.exit(usage)
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for path in sys.argv[2:]:
        m = convert(onnx.load(path))
        onnx.checker.check_model(m)
        dst = out / (pathlib.Path(path).stem + "_" + suffix + ".onnx")
        onnx.save(m, str(dst))
        print(dst)
