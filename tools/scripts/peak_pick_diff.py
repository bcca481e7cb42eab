#!/usr/bin/python3
"""How far decisions taken on float outputs (a peak pick, an argmax) differ between two runs of a
model, e.g. onnxruntime's and a tgc artifact's (docs/robustness.md, "Outputs that can differ
from onnxruntime").

usage: peak_pick_diff.py map REF.npy GOT.npy [THRESHOLD...]
         a probability map [N, C, H, W]: the values, then the peaks p == MaxPool3x3(p) (stride 1,
         pad 1, as a post-processing step without NMS picks them) above each threshold
         (default 0 and 0.3)
       peak_pick_diff.py make DIR
         writes DIR/peak.onnx (two 3x3 convs, a sigmoid heat map, its peak mask computed in the
         model by Equal(x, MaxPool(x)), and an ArgMax over 16 channels) and DIR/x.npy
       peak_pick_diff.py outputs REF_DIR GOT_DIR
         compares peak.onnx's outputs (heat, peak, cls) element by element
"""
import sys

import numpy as np


def maxpool3(p):
    q = np.pad(p, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    h, w = p.shape[2:]
    return np.max(np.stack([q[:, :, i:i + h, j:j + w] for i in range(3) for j in range(3)]), axis=0)


def per_1e4(n, size):
    return f"{n} of {size} ({n / size * 1e4:.1f} per 10^4)"


if sys.argv[1] == "map":
    a, b = np.load(sys.argv[2]), np.load(sys.argv[3])
    print(f"values differ at {per_1e4(int((a != b).sum()), a.size)}, max abs {np.abs(a - b).max():.3g}; "
          f"exactly 0: {(a == 0).sum()} / {(b == 0).sum()}")
    for t in [float(v) for v in sys.argv[4:]] or [0.0, 0.3]:
        pa, pb = (a == maxpool3(a)) & (a > t), (b == maxpool3(b)) & (b > t)
        print(f"peaks above {t}: {pa.sum()} / {pb.sum()}; the masks differ at {per_1e4(int((pa != pb).sum()), a.size)}")
elif sys.argv[1] == "make":
    import onnx
    from onnx import TensorProto as T
    from onnx import helper, numpy_helper as nh
    d, r, C = sys.argv[2], np.random.default_rng(0), 16
    w1 = nh.from_array((r.standard_normal((C, 3, 3, 3)) * 0.4).astype(np.float32), "w1")
    w2 = nh.from_array((r.standard_normal((C, C, 3, 3)) * 0.15).astype(np.float32), "w2")
    n = helper.make_node
    nodes = [n("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]), n("Relu", ["c1"], ["r1"]),
             n("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1]), n("Sigmoid", ["c2"], ["heat"]),
             n("MaxPool", ["heat"], ["mp"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             n("Equal", ["heat", "mp"], ["eq"]), n("Cast", ["eq"], ["peak"], to=T.FLOAT),
             n("ArgMax", ["c2"], ["cls"], axis=1, keepdims=0)]
    outs = [helper.make_tensor_value_info(o, t, None) for o, t in (("heat", T.FLOAT), ("peak", T.FLOAT), ("cls", T.INT64))]
    g = helper.make_graph(nodes, "peak", [helper.make_tensor_value_info("x", T.FLOAT, [1, 3, 256, 256])], outs, [w1, w2])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{d}/peak.onnx")
    np.save(f"{d}/x.npy", r.standard_normal((1, 3, 256, 256)).astype(np.float32))
elif sys.argv[1] == "outputs":
    for name in ("heat", "peak", "cls"):
        a, b = np.load(f"{sys.argv[2]}/{name}.npy"), np.load(f"{sys.argv[3]}/{name}.npy")
        print(f"{name}: differs at {per_1e4(int((a != b).sum()), a.size)}, max abs {np.abs(a - b).max():.3g}")
else:
    sys.exit(__doc__)
