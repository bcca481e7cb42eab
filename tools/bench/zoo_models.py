#!/usr/bin/python3
"""Writes tgc-bench's model zoo as ONNX files (opset 17): the architectures people deploy, at
their real layer structure (channel counts, kernel sizes, strides, dilations, head counts) and
input sizes, with random weights from a fixed seed (no downloads), plus single-Conv
microbenchmarks of the convolution shapes those networks spend their time in.

usage: zoo_models.py OUT_DIR [--only NAME,...] [--small] [--no-twins]

The graphs are written the way exporters write them: torch.onnx at opset 17 folds a BatchNorm
that follows a Conv into the Conv's weights and bias (a BatchNorm that follows anything else, as
in DenseNet, stays a BatchNormalization), GELU is x * 0.5 * (1 + erf(x / sqrt 2)), SiLU is
Sigmoid and Mul, ReLU6 is Clip(0, 6), hardswish/hardsigmoid are HardSwish/HardSigmoid, upsampling
is Resize, LayerNorm is LayerNormalization. Weights are He-initialised (variance 2 / fan-in before
a ReLU-like activation, 1 / fan-in otherwise) and the last layer of each residual branch is scaled
down, so activations stay of order one through 50 layers and both runtimes see finite, non-trivial
values. --small builds the same graphs at a reduced input size (64x64 images, short sequences),
for the integration test.

Also written: fp16 twins (tools/bench/fp16_models.py) and dynamically quantized int8 twins
(tools/bench/int8_models.py) of a few models, unless --no-twins or --only. OUT_DIR/index.txt lists
every file in table order with its kind: "FILE model", "FILE micro", "FILE fp16", "FILE int8".
"""
import argparse
import math
import pathlib
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import fp16_models
import int8_models

F32 = TensorProto.FLOAT
OPSET = 17


class Graph:
    """An ONNX graph under construction: nodes, initializers and unique names."""

    def __init__(self, name, seed):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.inputs, self.outputs = [], [], [], []
        self.count = 0

    def fresh(self, base):
        self.count += 1
        return f"{base}_{self.count}"

    def const(self, arr, base="c"):
        name = self.fresh(base)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def i64(self, values):
        return self.const(np.array(values, np.int64), "shape")

    def f32(self, value):
        return self.const(np.array(value, np.float32), "k")

    def op(self, op_type, inputs, n_out=1, base=None, **attrs):
        outs = [self.fresh(base or op_type.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=outs[0], **attrs))
        return outs[0] if n_out == 1 else outs

    def input(self, name, shape, dtype=F32):
        self.inputs.append(helper.make_tensor_value_info(name, dtype, shape))
        return name

    def output(self, x, name, shape=None):
        self.nodes.append(helper.make_node("Identity", [x], [name]))
        self.outputs.append(helper.make_tensor_value_info(name, F32, shape))

    def normal(self, shape, std):
        return (self.rng.standard_normal(shape) * std).astype(np.float32)

    # Activations as torch.onnx writes them.
    def act(self, x, kind):
        if kind is None:
            return x
        if kind == "relu":
            return self.op("Relu", [x])
        if kind == "relu6":
            return self.op("Clip", [x, self.f32(0.0), self.f32(6.0)])
        if kind == "silu":
            return self.op("Mul", [x, self.op("Sigmoid", [x])])
        if kind == "hswish":
            return self.op("HardSwish", [x])
        if kind == "hsigmoid":
            return self.op("HardSigmoid", [x], alpha=1.0 / 6, beta=0.5)
        if kind == "sigmoid":
            return self.op("Sigmoid", [x])
        if kind == "gelu":
            e = self.op("Erf", [self.op("Div", [x, self.f32(math.sqrt(2.0))])])
            return self.op("Mul", [self.op("Mul", [x, self.op("Add", [e, self.f32(1.0)])]), self.f32(0.5)])
        if kind == "tanh":
            return self.op("Tanh", [x])
        raise ValueError(kind)

    def conv(self, x, cin, cout, k, s=1, p=None, d=1, g=1, act=None, bias=True, gain=None, pads=None):
        """Conv (a following BatchNorm folded into weight and bias) and its activation."""
        kh, kw = (k, k) if isinstance(k, int) else k
        if pads is None:
            p = d * (kh - 1) // 2 if p is None else p
            pads = [p, p, p, p] if isinstance(p, int) else p
        fan_in = cin // g * kh * kw
        gain = gain if gain is not None else (2.0 if act else 1.0)
        w = self.const(self.normal((cout, cin // g, kh, kw), math.sqrt(gain / fan_in)), "w")
        ins = [x, w] + ([self.const(self.normal((cout,), 0.05), "b")] if bias else [])
        y = self.op("Conv", ins, base="conv", kernel_shape=[kh, kw], strides=[s, s], pads=pads, dilations=[d, d],
                    group=g)
        return self.act(y, act)

    def batchnorm(self, x, c):
        """An unfolded BatchNormalization (inference mode), as exporters keep one that follows no Conv."""
        ins = [x, self.const(1 + self.normal((c,), 0.1), "bn_scale"), self.const(self.normal((c,), 0.1), "bn_bias"),
               self.const(self.normal((c,), 0.1), "bn_mean"),
               self.const((1 + np.abs(self.normal((c,), 0.1))).astype(np.float32), "bn_var")]
        return self.op("BatchNormalization", ins, base="bn", epsilon=1e-5)

    def linear(self, x, cin, cout, bias=True, gain=1.0, gemm=False):
        """nn.Linear: MatMul by the transposed weight and Add of the bias (Gemm on a 2-D input)."""
        w = self.normal((cin, cout), math.sqrt(gain / cin))
        b = self.normal((cout,), 0.02)
        if gemm:
            return self.op("Gemm", [x, self.const(w.T.copy(), "w"), self.const(b, "b")], base="gemm", transB=1)
        y = self.op("MatMul", [x, self.const(w, "w")], base="matmul")
        return self.op("Add", [y, self.const(b, "b")]) if bias else y

    def layernorm(self, x, c, eps=1e-5, axis=-1):
        return self.op("LayerNormalization", [x, self.const(1 + self.normal((c,), 0.1), "ln_scale"),
                                              self.const(self.normal((c,), 0.1), "ln_bias")], base="ln",
                       axis=axis, epsilon=eps)

    def maxpool(self, x, k, s, p=0, ceil=0):
        return self.op("MaxPool", [x], kernel_shape=[k, k], strides=[s, s], pads=[p] * 4, ceil_mode=ceil)

    def classifier(self, x, cin, classes=1000):
        """GlobalAveragePool, Flatten, Gemm: the head of torchvision's classifiers."""
        return self.linear(self.op("Flatten", [self.op("GlobalAveragePool", [x])], axis=1), cin, classes, gemm=True)

    def model(self, metric="flops"):
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, initializer=self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="tgc-bench zoo")
        m.ir_version = 8
        helper.set_model_props(m, {"bench.metric": metric})
        return m


def make_divisible(v, d=8):
    n = max(d, int(v + d / 2) // d * d)
    return n + d if n < 0.9 * v else n


# --- Convolutional classifiers -------------------------------------------------------------


def resnet(name, blocks, bottleneck, size):
    g = Graph(name, 1)
    x = g.input("input", [1, 3, size, size])
    x = g.maxpool(g.conv(x, 3, 64, 7, 2, act="relu"), 3, 2, 1)
    cin = 64
    for stage, (n, width) in enumerate(zip(blocks, (64, 128, 256, 512))):
        for i in range(n):
            s = 2 if i == 0 and stage > 0 else 1
            out = width * 4 if bottleneck else width
            if bottleneck:  # torchvision's v1.5: the stride on the 3x3
                y = g.conv(x, cin, width, 1, act="relu")
                y = g.conv(y, width, width, 3, s, act="relu")
                y = g.conv(y, width, out, 1, gain=0.2)
            else:
                y = g.conv(g.conv(x, cin, width, 3, s, act="relu"), width, width, 3, gain=0.2)
            skip = x if s == 1 and cin == out else g.conv(x, cin, out, 1, s)
            x, cin = g.op("Relu", [g.op("Add", [y, skip])]), out
    g.output(g.classifier(x, cin), "logits", [1, 1000])
    return g.model()


def mobilenet_v2_features(g, x, dilate_last=False):
    """torchvision's MobileNetV2 features (ReLU6, inverted residuals); with dilate_last, output
    stride 16 as DeepLab uses it: the last stride-2 stage keeps its resolution and dilates by 2."""
    x = g.conv(x, 3, 32, 3, 2, act="relu6")
    cin, dilation = 32, 1
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)]:
        for i in range(n):
            stride = s if i == 0 else 1
            d = dilation
            if dilate_last and c >= 160 and stride == 2:
                stride, dilation = 1, 2
            hidden = cin * t
            y = g.conv(x, cin, hidden, 1, act="relu6") if t != 1 else x
            y = g.conv(y, hidden, hidden, 3, stride, d=d, g=hidden, act="relu6")
            y = g.conv(y, hidden, c, 1, gain=0.5 if stride == 1 and cin == c else 1.0)
            x = g.op("Add", [x, y]) if stride == 1 and cin == c else y
            cin = c
    return x, cin


def mobilenet_v2(size):
    g = Graph("mobilenet_v2", 2)
    x, c = mobilenet_v2_features(g, g.input("input", [1, 3, size, size]))
    x = g.conv(x, c, 1280, 1, act="relu6")
    g.output(g.classifier(x, 1280), "logits", [1, 1000])
    return g.model()


def squeeze_excite(g, x, c, squeeze, inner_act, gate_act):
    s = g.op("GlobalAveragePool", [x])
    s = g.conv(s, c, squeeze, 1, act=inner_act)
    s = g.conv(s, squeeze, c, 1, act=gate_act)
    return g.op("Mul", [x, s])


def mobilenet_v3(name, size, large):
    g = Graph(name, 3)
    # kernel, expanded, out, squeeze-excite, activation, stride (torchvision's tables)
    if large:
        cfg = [(3, 16, 16, 0, "relu", 1), (3, 64, 24, 0, "relu", 2), (3, 72, 24, 0, "relu", 1),
               (5, 72, 40, 1, "relu", 2), (5, 120, 40, 1, "relu", 1), (5, 120, 40, 1, "relu", 1),
               (3, 240, 80, 0, "hswish", 2), (3, 200, 80, 0, "hswish", 1), (3, 184, 80, 0, "hswish", 1),
               (3, 184, 80, 0, "hswish", 1), (3, 480, 112, 1, "hswish", 1), (3, 672, 112, 1, "hswish", 1),
               (5, 672, 160, 1, "hswish", 2), (5, 960, 160, 1, "hswish", 1), (5, 960, 160, 1, "hswish", 1)]
        last, head = 960, 1280
    else:
        cfg = [(3, 16, 16, 1, "relu", 2), (3, 72, 24, 0, "relu", 2), (3, 88, 24, 0, "relu", 1),
               (5, 96, 40, 1, "hswish", 2), (5, 240, 40, 1, "hswish", 1), (5, 240, 40, 1, "hswish", 1),
               (5, 120, 48, 1, "hswish", 1), (5, 144, 48, 1, "hswish", 1), (5, 288, 96, 1, "hswish", 2),
               (5, 576, 96, 1, "hswish", 1), (5, 576, 96, 1, "hswish", 1)]
        last, head = 576, 1024
    x = g.conv(g.input("input", [1, 3, size, size]), 3, 16, 3, 2, act="hswish")
    cin = 16
    for k, exp, out, se, a, s in cfg:
        y = g.conv(x, cin, exp, 1, act=a) if exp != cin else x
        y = g.conv(y, exp, exp, k, s, g=exp, act=a)
        if se:
            y = squeeze_excite(g, y, exp, make_divisible(exp // 4), "relu", "hsigmoid")
        residual = s == 1 and cin == out
        y = g.conv(y, exp, out, 1, gain=0.5 if residual else 1.0)
        x, cin = (g.op("Add", [y, x]) if residual else y), out
    x = g.op("GlobalAveragePool", [g.conv(x, cin, last, 1, act="hswish")])
    x = g.act(g.linear(g.op("Flatten", [x], axis=1), last, head, gemm=True, gain=2.0), "hswish")
    g.output(g.linear(x, head, 1000, gemm=True), "logits", [1, 1000])
    return g.model()


def efficientnet_b0(size):
    g = Graph("efficientnet_b0", 4)
    x = g.conv(g.input("input", [1, 3, size, size]), 3, 32, 3, 2, act="silu")
    cin = 32
    for expand, k, s, out, n in [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
                                 (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]:
        for i in range(n):
            stride = s if i == 0 else 1
            exp = cin * expand
            y = g.conv(x, cin, exp, 1, act="silu") if expand != 1 else x
            y = g.conv(y, exp, exp, k, stride, g=exp, act="silu")
            y = squeeze_excite(g, y, exp, max(1, cin // 4), "silu", "sigmoid")
            residual = stride == 1 and cin == out
            y = g.conv(y, exp, out, 1, gain=0.5 if residual else 1.0)
            x, cin = (g.op("Add", [y, x]) if residual else y), out
    x = g.conv(x, cin, 1280, 1, act="silu")
    g.output(g.classifier(x, 1280), "logits", [1, 1000])
    return g.model()


def squeezenet1_1(size):
    g = Graph("squeezenet1_1", 5)
    x = g.maxpool(g.conv(g.input("input", [1, 3, size, size]), 3, 64, 3, 2, p=0, act="relu"), 3, 2, ceil=1)
    cin = 64

    def fire(x, cin, squeeze, expand):
        s = g.conv(x, cin, squeeze, 1, act="relu")
        return g.op("Concat", [g.conv(s, squeeze, expand, 1, act="relu"), g.conv(s, squeeze, expand, 3, act="relu")],
                    axis=1), 2 * expand

    for i, (sq, ex) in enumerate([(16, 64), (16, 64), (32, 128), (32, 128), (48, 192), (48, 192), (64, 256),
                                  (64, 256)]):
        x, cin = fire(x, cin, sq, ex)
        if i in (1, 3):
            x = g.maxpool(x, 3, 2, ceil=1)
    x = g.conv(x, cin, 1000, 1, act="relu")
    g.output(g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1), "logits", [1, 1000])
    return g.model()


def shufflenet_v2(size):
    g = Graph("shufflenet_v2_x1_0", 6)
    x = g.maxpool(g.conv(g.input("input", [1, 3, size, size]), 3, 24, 3, 2, act="relu"), 3, 2, 1)
    hw, cin = size // 4, 24

    def shuffle(x, c, hw):
        x = g.op("Reshape", [x, g.i64([1, 2, c // 2, hw, hw])])
        x = g.op("Transpose", [x], perm=[0, 2, 1, 3, 4])
        return g.op("Reshape", [x, g.i64([1, c, hw, hw])])

    for out, n in [(116, 4), (232, 8), (464, 4)]:
        half = out // 2
        for i in range(n):
            if i == 0:
                hw //= 2
                b1 = g.conv(g.conv(x, cin, cin, 3, 2, g=cin), cin, half, 1, act="relu")
                b2 = g.conv(x, cin, half, 1, act="relu")
                b2 = g.conv(g.conv(b2, half, half, 3, 2, g=half), half, half, 1, act="relu")
            else:
                b1, b2 = g.op("Split", [x, g.i64([half, half])], n_out=2, axis=1)
                b2 = g.conv(b2, half, half, 1, act="relu")
                b2 = g.conv(g.conv(b2, half, half, 3, 1, g=half), half, half, 1, act="relu")
            x, cin = shuffle(g.op("Concat", [b1, b2], axis=1), out, hw), out
    x = g.conv(x, cin, 1024, 1, act="relu")
    x = g.op("ReduceMean", [x], axes=[2, 3], keepdims=0)  # torch: x.mean([2, 3])
    g.output(g.linear(x, 1024, 1000, gemm=True), "logits", [1, 1000])
    return g.model()


def densenet121(size):
    """torchvision's DenseNet-121: BN-ReLU-Conv layers, so the BatchNorms after a Concat stay."""
    g = Graph("densenet121", 7)
    x = g.maxpool(g.conv(g.input("input", [1, 3, size, size]), 3, 64, 7, 2, act="relu"), 3, 2, 1)
    cin = 64
    for bi, n in enumerate((6, 12, 24, 16)):
        features = [x]
        for _ in range(n):
            cat = g.op("Concat", features, axis=1) if len(features) > 1 else features[0]
            y = g.conv(g.op("Relu", [g.batchnorm(cat, cin)]), cin, 128, 1, act="relu")
            features.append(g.conv(y, 128, 32, 3))
            cin += 32
        x = g.op("Concat", features, axis=1)
        if bi < 3:
            x = g.conv(g.op("Relu", [g.batchnorm(x, cin)]), cin, cin // 2, 1, bias=False)
            x = g.op("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2])
            cin //= 2
    x = g.op("Relu", [g.batchnorm(x, cin)])
    g.output(g.classifier(x, cin), "logits", [1, 1000])
    return g.model()


def convnext_tiny(size):
    """torchvision's ConvNeXt-T: 7x7 depthwise, LayerNorm and MLP on NHWC (Transposes), GELU."""
    g = Graph("convnext_tiny", 8)
    x = g.conv(g.input("input", [1, 3, size, size]), 3, 96, 4, 4, p=0)

    def ln2d(x, c):  # LayerNorm2d: permute to NHWC, normalize channels, permute back
        y = g.layernorm(g.op("Transpose", [x], perm=[0, 2, 3, 1]), c, 1e-6)
        return g.op("Transpose", [y], perm=[0, 3, 1, 2])

    x = ln2d(x, 96)
    dims = (96, 192, 384, 768)
    for stage, n in enumerate((3, 3, 9, 3)):
        c = dims[stage]
        if stage:
            x = g.conv(ln2d(x, dims[stage - 1]), dims[stage - 1], c, 2, 2, p=0)
        for _ in range(n):
            y = g.conv(x, c, c, 7, g=c)
            y = g.layernorm(g.op("Transpose", [y], perm=[0, 2, 3, 1]), c, 1e-6)
            y = g.linear(g.act(g.linear(y, c, 4 * c, gain=2.0), "gelu"), 4 * c, c)
            y = g.op("Mul", [y, g.const(np.full((c,), 0.3, np.float32), "layer_scale")])
            x = g.op("Add", [x, g.op("Transpose", [y], perm=[0, 3, 1, 2])])
    x = g.op("GlobalAveragePool", [x])
    x = g.op("Flatten", [ln2d(x, 768)], axis=1)
    g.output(g.linear(x, 768, 1000, gemm=True), "logits", [1, 1000])
    return g.model()


# --- Dense prediction ----------------------------------------------------------------------


def unet(size, base=32):
    """U-Net (Ronneberger et al.) with padded 3x3 convs: two Conv-BN-ReLU per level, MaxPool
    down, ConvTranspose 2x2 stride 2 up, Concat with the skip; widths base..16*base."""
    g = Graph("unet", 9)
    x = g.input("input", [1, 3, size, size])
    skips, cin = [], 3
    widths = [base * 2**i for i in range(5)]
    for i, w in enumerate(widths):
        x = g.conv(g.conv(x, cin, w, 3, act="relu"), w, w, 3, act="relu")
        cin = w
        if i < 4:
            skips.append(x)
            x = g.maxpool(x, 2, 2)
    for w, skip in zip(reversed(widths[:4]), reversed(skips)):
        wt = g.const(g.normal((cin, w, 2, 2), math.sqrt(1.0 / (cin))), "w")
        up = g.op("ConvTranspose", [x, wt, g.const(g.normal((w,), 0.05), "b")], base="convT", kernel_shape=[2, 2],
                  strides=[2, 2])
        x = g.op("Concat", [skip, up], axis=1)
        x = g.conv(g.conv(x, 2 * w, w, 3, act="relu"), w, w, 3, act="relu")
        cin = w
    g.output(g.conv(x, cin, 2, 1), "mask", [1, 2, size, size])
    return g.model()


def deeplabv3_mobilenet_v2(size):
    """DeepLabV3 on MobileNetV2 at output stride 16: ASPP (1x1, 3x3 at dilations 6, 12, 18, image
    pooling), bilinear Resize back to the input size, 21 classes."""
    g = Graph("deeplabv3_mobilenet_v2", 10)
    x, cin = mobilenet_v2_features(g, g.input("input", [1, 3, size, size]), dilate_last=True)
    fs = size // 16
    branches = [g.conv(x, cin, 256, 1, act="relu")]
    branches += [g.conv(x, cin, 256, 3, d=r, act="relu") for r in (6, 12, 18)]
    pool = g.conv(g.op("GlobalAveragePool", [x]), cin, 256, 1, act="relu")
    branches.append(g.op("Resize", [pool, "", "", g.i64([1, 256, fs, fs])], mode="linear",
                         coordinate_transformation_mode="half_pixel"))
    y = g.conv(g.op("Concat", branches, axis=1), 5 * 256, 256, 1, act="relu")
    y = g.conv(g.conv(y, 256, 256, 3, act="relu"), 256, 21, 1)
    y = g.op("Resize", [y, "", "", g.i64([1, 21, size, size])], mode="linear",
             coordinate_transformation_mode="half_pixel")
    g.output(y, "out", [1, 21, size, size])
    return g.model()


def yolov8n(size):
    """YOLOv8n (width 0.25, depth 0.33): Conv-SiLU, C2f (CSP) blocks, SPPF, nearest Resize and
    Concat in the neck, the decoupled head with DFL and box decoding as Ultralytics exports it."""
    g = Graph("yolov8n", 11)

    def cv(x, cin, cout, k=1, s=1):
        return g.conv(x, cin, cout, k, s, act="silu")

    def c2f(x, cin, cout, n, shortcut):
        c = cout // 2
        ys = list(g.op("Split", [cv(x, cin, 2 * c), g.i64([c, c])], n_out=2, axis=1))
        for _ in range(n):
            y = cv(cv(ys[-1], c, c, 3), c, c, 3)
            ys.append(g.op("Add", [ys[-1], y]) if shortcut else y)
        return cv(g.op("Concat", ys, axis=1), (2 + n) * c, cout)

    def up(x):
        return g.op("Resize", [x, "", g.const(np.array([1, 1, 2, 2], np.float32), "scales")], mode="nearest",
                    coordinate_transformation_mode="asymmetric", nearest_mode="floor")

    x = cv(cv(g.input("images", [1, 3, size, size]), 3, 16, 3, 2), 16, 32, 3, 2)
    x = c2f(x, 32, 32, 1, True)
    p3 = c2f(cv(x, 32, 64, 3, 2), 64, 64, 2, True)
    p4 = c2f(cv(p3, 64, 128, 3, 2), 128, 128, 2, True)
    x = c2f(cv(p4, 128, 256, 3, 2), 256, 256, 1, True)
    y = cv(x, 256, 128)  # SPPF
    m1 = g.maxpool(y, 5, 1, 2)
    m2 = g.maxpool(m1, 5, 1, 2)
    p5 = cv(g.op("Concat", [y, m1, m2, g.maxpool(m2, 5, 1, 2)], axis=1), 512, 256)
    n4 = c2f(g.op("Concat", [up(p5), p4], axis=1), 384, 128, 1, False)
    o3 = c2f(g.op("Concat", [up(n4), p3], axis=1), 192, 64, 1, False)
    o4 = c2f(g.op("Concat", [cv(o3, 64, 64, 3, 2), n4], axis=1), 192, 128, 1, False)
    o5 = c2f(g.op("Concat", [cv(o4, 128, 128, 3, 2), p5], axis=1), 384, 256, 1, False)
    levels, anchors, strides = [], [], []
    for o, c, stride in [(o3, 64, 8), (o4, 128, 16), (o5, 256, 32)]:
        box = g.conv(cv(cv(o, c, 64, 3), 64, 64, 3), 64, 64, 1)
        cls = g.conv(cv(cv(o, c, 80, 3), 80, 80, 3), 80, 80, 1)
        hw = size // stride
        levels.append(g.op("Reshape", [g.op("Concat", [box, cls], axis=1), g.i64([1, 144, hw * hw])]))
        gy, gx = np.meshgrid(np.arange(hw) + 0.5, np.arange(hw) + 0.5, indexing="ij")
        anchors.append(np.stack([gx.ravel(), gy.ravel()]))
        strides.append(np.full((1, hw * hw), stride))
    n = sum(a.shape[1] for a in anchors)
    box, cls = g.op("Split", [g.op("Concat", levels, axis=2), g.i64([64, 80])], n_out=2, axis=1)
    # DFL: a softmax over 16 bins per side, its expectation by a 1x1 Conv with weights 0..15.
    d = g.op("Softmax", [g.op("Transpose", [g.op("Reshape", [box, g.i64([1, 4, 16, n])])], perm=[0, 2, 1, 3])],
             axis=1)
    d = g.op("Conv", [d, g.const(np.arange(16, dtype=np.float32).reshape(1, 16, 1, 1), "dfl")], base="conv",
             kernel_shape=[1, 1])
    lt, rb = g.op("Split", [g.op("Reshape", [d, g.i64([1, 4, n])]), g.i64([2, 2])], n_out=2, axis=1)
    anchor = g.const(np.concatenate(anchors, 1)[None].astype(np.float32), "anchors")
    x1y1, x2y2 = g.op("Sub", [anchor, lt]), g.op("Add", [anchor, rb])
    cxy = g.op("Div", [g.op("Add", [x1y1, x2y2]), g.f32(2.0)])
    wh = g.op("Sub", [x2y2, x1y1])
    boxes = g.op("Mul", [g.op("Concat", [cxy, wh], axis=1),
                         g.const(np.concatenate(strides, 1)[None].astype(np.float32), "strides")])
    g.output(g.op("Concat", [boxes, g.op("Sigmoid", [cls])], axis=1), "output0", [1, 84, n])
    return g.model()


def blazeface(size):
    """BlazeFace (front camera, 128x128): 5x5 depthwise BlazeBlocks; a stride-2 block max-pools
    its skip path and zero-pads its channels (Pad on axis 1) up to the block's output width."""
    g = Graph("blazeface", 12)
    x = g.input("input", [1, 3, size, size])
    x = g.conv(x, 3, 24, 5, 2, act="relu", pads=[1, 1, 2, 2])

    def block(x, cin, cout, s=1):
        if s == 2:
            y = g.conv(x, cin, cin, 5, 2, g=cin, pads=[1, 1, 2, 2])
            skip = g.maxpool(x, 2, 2)
        else:
            y, skip = g.conv(x, cin, cin, 5, g=cin), x
        y = g.conv(y, cin, cout, 1, gain=0.5)
        if cout > cin:
            skip = g.op("Pad", [skip, g.i64([0, 0, 0, 0, 0, cout - cin, 0, 0])], mode="constant")
        return g.op("Relu", [g.op("Add", [y, skip])])

    chans = [24, 24, 28, 32, 36, 42, 48, 56, 64, 72, 80, 88]
    for cin, cout in zip(chans, chans[1:]):
        x = block(x, cin, cout, 2 if cout in (32, 48) else 1)
    f16 = x
    x = block(x, 88, 96, 2)
    for _ in range(4):
        x = block(x, 96, 96)

    def head(x, cin, per_cell, anchors):
        y = g.conv(x, cin, anchors * per_cell, 1)
        y = g.op("Transpose", [y], perm=[0, 2, 3, 1])
        return g.op("Reshape", [y, g.i64([1, -1, per_cell])])

    n = (size // 8) ** 2 * 2 + (size // 16) ** 2 * 6
    g.output(g.op("Concat", [head(f16, 88, 16, 2), head(x, 96, 16, 6)], axis=1), "regressors", [1, n, 16])
    g.output(g.op("Concat", [head(f16, 88, 1, 2), head(x, 96, 1, 6)], axis=1), "classificators", [1, n, 1])
    return g.model()


def super_resolution(size):
    """The super-resolution net of PyTorch's ONNX export tutorial (ESPCN-like, upscale 3):
    5x5 and 3x3 convs on the luma channel, then DepthToSpace."""
    g = Graph("super_resolution", 13)
    x = g.conv(g.input("input", [1, 1, size, size]), 1, 64, 5, act="relu")
    x = g.conv(g.conv(x, 64, 64, 3, act="relu"), 64, 32, 3, act="relu")
    x = g.conv(x, 32, 9, 3)
    g.output(g.op("DepthToSpace", [x], blocksize=3, mode="CRD"), "output", [1, 1, 3 * size, 3 * size])
    return g.model()


# --- Transformers ---------------------------------------------------------------------------


def attention(g, x, seq, dim, heads, fused_qkv, k_bias=True):
    """Multi-head self-attention as torch.onnx writes it: Reshape/Transpose into heads,
    MatMul, scale, Softmax, MatMul, back; fused_qkv: one 3*dim projection (timm), else three."""
    hd = dim // heads
    if fused_qkv:
        qkv = g.op("Reshape", [g.linear(x, dim, 3 * dim), g.i64([1, seq, 3, heads, hd])])
        qkv = g.op("Transpose", [qkv], perm=[2, 0, 3, 1, 4])
        q, k, v = (g.op("Gather", [qkv, g.i64(i)], axis=0) for i in range(3))
        kt = g.op("Transpose", [k], perm=[0, 1, 3, 2])
    else:
        def heads_of(t, perm):
            return g.op("Transpose", [g.op("Reshape", [t, g.i64([1, seq, heads, hd])])], perm=perm)

        q = heads_of(g.linear(x, dim, dim), [0, 2, 1, 3])
        kt = heads_of(g.linear(x, dim, dim, bias=k_bias), [0, 2, 3, 1])
        v = heads_of(g.linear(x, dim, dim), [0, 2, 1, 3])
    s = g.op("Mul", [g.op("MatMul", [q, kt]), g.f32(1.0 / math.sqrt(hd))])
    o = g.op("MatMul", [g.op("Softmax", [s], axis=-1), v])
    o = g.op("Reshape", [g.op("Transpose", [o], perm=[0, 2, 1, 3]), g.i64([1, seq, dim])])
    return g.linear(o, dim, dim, gain=0.5)


def mlp(g, x, dim, hidden):
    return g.linear(g.act(g.linear(x, dim, hidden, gain=2.0), "gelu"), hidden, dim, gain=0.5)


def vit_b16(size):
    g = Graph("vit_b16", 14)
    dim, heads, n = 768, 12, (size // 16) ** 2
    x = g.conv(g.input("input", [1, 3, size, size]), 3, dim, 16, 16, p=0)
    x = g.op("Transpose", [g.op("Reshape", [x, g.i64([1, dim, n])])], perm=[0, 2, 1])
    x = g.op("Concat", [g.const(g.normal((1, 1, dim), 0.5), "cls_token"), x], axis=1)
    x = g.op("Add", [x, g.const(g.normal((1, n + 1, dim), 0.5), "pos_embed")])
    for _ in range(12):  # pre-LN blocks (timm)
        x = g.op("Add", [x, attention(g, g.layernorm(x, dim, 1e-6), n + 1, dim, heads, True)])
        x = g.op("Add", [x, mlp(g, g.layernorm(x, dim, 1e-6), dim, 4 * dim)])
    x = g.op("Gather", [g.layernorm(x, dim, 1e-6), g.i64(0)], axis=1)
    g.output(g.linear(x, dim, 1000, gemm=True), "logits", [1, 1000])
    return g.model()


def bert_base(seq):
    """BERT-base's encoder (12 post-LN layers, 768 wide, 12 heads) and pooler, from the embedding
    sum: the 30522x768 word-embedding table and its Gather are left out (they would take the file
    to 440 MB for a lookup)."""
    g = Graph("bert_base", 15)
    dim = 768
    x = g.layernorm(g.input("embeddings", [1, seq, dim]), dim, 1e-12)
    for _ in range(12):
        x = g.layernorm(g.op("Add", [x, attention(g, x, seq, dim, 12, False)]), dim, 1e-12)
        x = g.layernorm(g.op("Add", [x, mlp(g, x, dim, 3072)]), dim, 1e-12)
    g.output(x, "last_hidden_state", [1, seq, dim])
    pooled = g.act(g.linear(g.op("Gather", [x, g.i64(0)], axis=1), dim, dim, gemm=True), "tanh")
    g.output(pooled, "pooler_output", [1, dim])
    return g.model()


def whisper_base_encoder(frames):
    """Whisper-base's audio encoder: two Conv1d + GELU (the second stride 2) over 80 log-mel
    bins, sinusoidal positions, 6 pre-LN layers (512 wide, 8 heads, no bias on k)."""
    g = Graph("whisper_base_encoder", 16)
    dim, seq = 512, frames // 2
    x = g.input("input_features", [1, 80, frames])

    def conv1d(x, cin, cout, s):
        w = g.const(g.normal((cout, cin, 3), math.sqrt(2.0 / (3 * cin))), "w")
        y = g.op("Conv", [x, w, g.const(g.normal((cout,), 0.05), "b")], base="conv", kernel_shape=[3], pads=[1, 1],
                 strides=[s])
        return g.act(y, "gelu")

    x = g.op("Transpose", [conv1d(conv1d(x, 80, dim, 1), dim, dim, 2)], perm=[0, 2, 1])
    t = np.arange(seq)[:, None] * np.exp(-math.log(10000) / (dim // 2 - 1) * np.arange(dim // 2))[None]
    x = g.op("Add", [x, g.const(np.concatenate([np.sin(t), np.cos(t)], 1)[None].astype(np.float32), "pos")])
    for _ in range(6):
        x = g.op("Add", [x, attention(g, g.layernorm(x, dim), seq, dim, 8, False, k_bias=False)])
        x = g.op("Add", [x, mlp(g, g.layernorm(x, dim), dim, 4 * dim)])
    g.output(g.layernorm(x, dim), "last_hidden_state", [1, seq, dim])
    return g.model()


# --- Recurrent speech models ----------------------------------------------------------------


def rnn_weights(g, gates, layers_in, hidden, dirs):
    w = g.const(g.normal((dirs, gates * hidden, layers_in), 1 / math.sqrt(hidden)), "W")
    r = g.const(g.normal((dirs, gates * hidden, hidden), 1 / math.sqrt(hidden)), "R")
    b = g.const(g.normal((dirs, 2 * gates * hidden), 0.1), "B")
    return w, r, b


def lstm_speech(frames):
    """A CTC acoustic model: 80 log-mel features per frame, 3 bidirectional LSTM layers of 320
    (batch-first in PyTorch: Transposes around the seq-first ONNX LSTM), a Linear to 29
    characters, LogSoftmax."""
    g = Graph("lstm_speech", 17)
    hidden, cin = 320, 80
    x = g.op("Transpose", [g.input("features", [1, frames, 80])], perm=[1, 0, 2])
    for _ in range(3):
        w, r, b = rnn_weights(g, 4, cin, hidden, 2)
        y = g.op("LSTM", [x, w, r, b], n_out=3, direction="bidirectional", hidden_size=hidden)[0]
        x = g.op("Reshape", [g.op("Transpose", [y], perm=[0, 2, 1, 3]), g.i64([frames, 1, 2 * hidden])])
        cin = 2 * hidden
    x = g.op("Transpose", [x], perm=[1, 0, 2])
    g.output(g.op("LogSoftmax", [g.linear(x, cin, 29)], axis=-1), "log_probs", [1, frames, 29])
    return g.model()


def gru_speech(frames):
    """A streaming keyword spotter / enhancer style net: a Conv1d front end over 40 filterbank
    features, 2 GRU layers of 256 (linear_before_reset, as PyTorch exports), per-frame Linear to
    12 classes and Softmax; the GRU state comes in and goes out."""
    g = Graph("gru_speech", 18)
    hidden = 256
    x = g.input("features", [1, 40, frames])
    h0 = g.input("state", [2, 1, hidden])
    w = g.const(g.normal((128, 40, 3), math.sqrt(2.0 / 120)), "w")
    x = g.op("Relu", [g.op("Conv", [x, w, g.const(g.normal((128,), 0.05), "b")], base="conv", kernel_shape=[3],
                           pads=[1, 1])])
    x, cin, states = g.op("Transpose", [x], perm=[2, 0, 1]), 128, []
    for layer in range(2):
        w, r, b = rnn_weights(g, 3, cin, hidden, 1)
        h = g.op("Gather", [h0, g.i64([layer])], axis=0)
        y, hn = g.op("GRU", [x, w, r, b, "", h], n_out=2, hidden_size=hidden, linear_before_reset=1)
        x, cin = g.op("Squeeze", [y, g.i64([1])]), hidden
        states.append(hn)
    x = g.op("Transpose", [x], perm=[1, 0, 2])
    g.output(g.op("Softmax", [g.linear(x, hidden, 12)], axis=-1), "probs", [1, frames, 12])
    g.output(g.op("Concat", states, axis=0), "state_out", [2, 1, hidden])
    return g.model()


# --- Conv microbenchmarks -----------------------------------------------------------------


def conv_micro(name, cin, cout, hw, k, s=1, d=1, g=1):
    """One Conv (bias) + Relu, as a folded Conv-BN-ReLU of a real network."""
    gr = Graph(name, 100)
    y = gr.conv(gr.input("x", [1, cin, hw, hw]), cin, cout, k, s, d=d, g=g, act="relu")
    out = (hw + 2 * (d * (k - 1) // 2) - d * (k - 1) - 1) // s + 1
    gr.output(y, "y", [1, cout, out, out])
    return gr.model()


MICRO = [
    ("conv3x3_64x80x80", lambda: conv_micro("conv3x3_64x80x80", 64, 64, 80, 3)),
    ("conv3x3_128x56x56", lambda: conv_micro("conv3x3_128x56x56", 128, 128, 56, 3)),
    ("conv3x3_256x56x56", lambda: conv_micro("conv3x3_256x56x56", 256, 256, 56, 3)),
    ("conv3x3s2_64to128x112x112", lambda: conv_micro("conv3x3s2_64to128x112x112", 64, 128, 112, 3, s=2)),
    ("conv3x3d2_256x32x32", lambda: conv_micro("conv3x3d2_256x32x32", 256, 256, 32, 3, d=2)),
    ("dwconv5x5_144x56x56", lambda: conv_micro("dwconv5x5_144x56x56", 144, 144, 56, 5, g=144)),
    ("dwconv5x5s2_240x56x56", lambda: conv_micro("dwconv5x5s2_240x56x56", 240, 240, 56, 5, s=2, g=240)),
    ("conv7x7s2_3to64x224x224", lambda: conv_micro("conv7x7s2_3to64x224x224", 3, 64, 224, 7, s=2)),
    ("conv3x3s2_3to32x224x224", lambda: conv_micro("conv3x3s2_3to32x224x224", 3, 32, 224, 3, s=2)),
]

# name: (builder, full size, --small size). Sizes are what each model sees in use.
MODELS = {
    "resnet18": (lambda s: resnet("resnet18", (2, 2, 2, 2), False, s), 224, 64),
    "resnet50": (lambda s: resnet("resnet50", (3, 4, 6, 3), True, s), 224, 64),
    "mobilenet_v2": (mobilenet_v2, 224, 64),
    "mobilenet_v3_large": (lambda s: mobilenet_v3("mobilenet_v3_large", s, True), 224, 64),
    "mobilenet_v3_small": (lambda s: mobilenet_v3("mobilenet_v3_small", s, False), 224, 64),
    "efficientnet_b0": (efficientnet_b0, 224, 64),
    "squeezenet1_1": (squeezenet1_1, 224, 64),
    "shufflenet_v2_x1_0": (shufflenet_v2, 224, 64),
    "densenet121": (densenet121, 224, 64),
    "convnext_tiny": (convnext_tiny, 224, 64),
    "unet": (unet, 512, 64),
    "deeplabv3_mobilenet_v2": (deeplabv3_mobilenet_v2, 512, 64),
    "yolov8n": (yolov8n, 640, 64),
    "blazeface": (blazeface, 128, 64),
    "super_resolution": (super_resolution, 224, 32),
    "vit_b16": (vit_b16, 224, 64),
    "bert_base": (bert_base, 128, 16),
    "whisper_base_encoder": (whisper_base_encoder, 3000, 64),
    "lstm_speech": (lstm_speech, 100, 16),
    "gru_speech": (gru_speech, 100, 8),
}

# Twins (fp16_models.py, int8_models.py: the conversions converters and quantize_dynamic do).
FP16_TWINS = ["resnet50", "mobilenet_v2", "yolov8n", "vit_b16"]
INT8_TWINS = ["resnet18", "mobilenet_v2", "efficientnet_b0", "bert_base"]


def main():
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("out")
    p.add_argument("--only", help="comma-separated model or microbenchmark names")
    p.add_argument("--small", action="store_true", help="reduced input sizes (for tests)")
    p.add_argument("--no-twins", action="store_true")
    a = p.parse_args()
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    only = set(a.only.split(",")) if a.only else None
    unknown = (only or set()) - set(MODELS) - {n for n, _ in MICRO}
    if unknown:
        sys.exit(f"zoo_models.py: unknown model(s): {', '.join(sorted(unknown))}")
    index = []

    def save(m, name, kind):
        onnx.checker.check_model(m)
        path = out / f"{name}.onnx"
        onnx.save(m, str(path))
        mb = path.stat().st_size / 2**20
        if mb > 400:
            sys.exit(f"zoo_models.py: {name} is {mb:.0f} MB, over 400")
        index.append(f"{name}.onnx {kind}")

    for name, (build, full, small) in MODELS.items():
        if only is not None and name not in only:
            continue
        m = build(small if a.small else full)
        save(m, name, "model")
        if a.no_twins or only is not None:
            continue
        for twins, suffix, convert in [(FP16_TWINS, "fp16", fp16_models.convert),
                                       (INT8_TWINS, "int8", lambda m: int8_models.convert(m, matmul=True))]:
            if name in twins:
                copy = onnx.ModelProto()
                copy.CopyFrom(m)  # the conversions change the model they are given
                save(convert(copy), f"{name}_{suffix}", suffix)
    for name, build in MICRO:
        if only is None or name in only:
            save(build(), name, "micro")
    (out / "index.txt").write_text("".join(line + "\n" for line in index))
    return 0


if __name__ == "__main__":
    sys.exit(main())
