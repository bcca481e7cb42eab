#!/usr/bin/python3
"""Train a small CNN on scikit-learn's 8x8 digits and export it as ONNX.

Run with Debian's python (it has numpy, onnx 1.12 and scikit-learn):

    /usr/bin/python3 models/train_digits_cnn.py

Outputs, next to this script:
    digits_cnn.onnx                      the trained model (opset 13)
    digits_samples/image_<k>.npy         test images, float32 [1,1,8,8]
    digits_samples/expected_probs_<k>.npy reference outputs, float32 [1,10]
    digits_samples/labels.txt            "<file> <true label> <predicted label>"

Training is plain numpy (hand-written forward and backward passes) and fully
deterministic: running the script twice produces byte-identical files.
"""

import os

# One BLAS thread: keeps summation order (hence the output bytes) fixed and
# avoids competing with other builds on the machine.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ONNX_PATH = os.path.join(HERE, "digits_cnn.onnx")
SAMPLES_DIR = os.path.join(HERE, "digits_samples")

SEED = 0
EPOCHS = 30
BATCH = 32
LEARNING_RATE = 2e-3
NUM_SAMPLES = 4
MIN_ACCURACY = 0.95


# ---------------------------------------------------------------- data


def load_data():
    """Digits as float [N,1,8,8] in [0,1], split 75/25, stratified."""
    digits = load_digits()
    x = (digits.images / 16.0).reshape(-1, 1, 8, 8)
    y = digits.target.astype(np.int64)
    return train_test_split(x, y, test_size=0.25, random_state=0, stratify=y)


# ---------------------------------------------------------------- layers
#
# Each forward returns (output, cache); each backward takes the upstream
# gradient and the cache and returns the input gradient (and parameter
# gradients). Convolutions use im2col so they are just matrix products.


def im2col_3x3(x):
    """[N,C,H,W] -> [N*H*W, C*9] patches of a 3x3 window with padding 1."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    patches = np.empty((n, c, 3, 3, h, w), dtype=x.dtype)
    for ky in range(3):
        for kx in range(3):
            patches[:, :, ky, kx] = xp[:, :, ky:ky + h, kx:kx + w]
    # Order (c, ky, kx) matches the flattened ONNX weight layout [M, C, 3, 3].
    return patches.transpose(0, 4, 5, 1, 2, 3).reshape(n * h * w, c * 9)


def col2im_3x3(cols, shape):
    """Adjoint of im2col_3x3: scatter-add patch gradients back to [N,C,H,W]."""
    n, c, h, w = shape
    patches = cols.reshape(n, h, w, c, 3, 3).transpose(0, 3, 4, 5, 1, 2)
    dxp = np.zeros((n, c, h + 2, w + 2), dtype=cols.dtype)
    for ky in range(3):
        for kx in range(3):
            dxp[:, :, ky:ky + h, kx:kx + w] += patches[:, :, ky, kx]
    return dxp[:, :, 1:-1, 1:-1]


def conv_forward(x, weight, bias):
    n, _, h, w = x.shape
    m = weight.shape[0]
    cols = im2col_3x3(x)
    out = cols @ weight.reshape(m, -1).T + bias
    return out.reshape(n, h, w, m).transpose(0, 3, 1, 2), (x.shape, cols, weight)


def conv_backward(dout, cache):
    x_shape, cols, weight = cache
    m = weight.shape[0]
    dout_flat = dout.transpose(0, 2, 3, 1).reshape(-1, m)
    dweight = (dout_flat.T @ cols).reshape(weight.shape)
    dbias = dout_flat.sum(axis=0)
    dx = col2im_3x3(dout_flat @ weight.reshape(m, -1), x_shape)
    return dx, dweight, dbias


def relu_forward(x):
    return np.maximum(x, 0.0), x > 0


def relu_backward(dout, mask):
    return dout * mask


def maxpool_forward(x):
    """2x2 window, stride 2; remembers which element of each window won."""
    n, c, h, w = x.shape
    windows = x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 1, 2, 4, 3, 5)
    windows = windows.reshape(n, c, h // 2, w // 2, 4)
    winner = windows.argmax(axis=-1)
    out = np.take_along_axis(windows, winner[..., None], axis=-1)[..., 0]
    return out, (x.shape, winner)


def maxpool_backward(dout, cache):
    (n, c, h, w), winner = cache
    dwindows = np.zeros((n, c, h // 2, w // 2, 4), dtype=dout.dtype)
    np.put_along_axis(dwindows, winner[..., None], dout[..., None], axis=-1)
    dwindows = dwindows.reshape(n, c, h // 2, w // 2, 2, 2).transpose(0, 1, 2, 4, 3, 5)
    return dwindows.reshape(n, c, h, w)


def gemm_forward(x, weight, bias):
    """ONNX Gemm with transB=1: y = x @ W^T + b, W is [out, in]."""
    return x @ weight.T + bias, (x, weight)


def gemm_backward(dout, cache):
    x, weight = cache
    return dout @ weight, dout.T @ x, dout.sum(axis=0)


def softmax(logits):
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=1, keepdims=True)


# ---------------------------------------------------------------- model


# (name, shape); the order is also the order of the ONNX initializers.
PARAM_SHAPES = [
    ("conv1.weight", (8, 1, 3, 3)),
    ("conv1.bias", (8,)),
    ("conv2.weight", (16, 8, 3, 3)),
    ("conv2.bias", (16,)),
    ("fc1.weight", (32, 64)),
    ("fc1.bias", (32,)),
    ("fc2.weight", (10, 32)),
    ("fc2.bias", (10,)),
]


def init_params(rng):
    """He-normal weights (the layers feed ReLUs), zero biases."""
    params = {}
    for name, shape in PARAM_SHAPES:
        if name.endswith(".bias"):
            params[name] = np.zeros(shape)
        else:
            fan_in = int(np.prod(shape[1:]))
            params[name] = rng.normal(0.0, np.sqrt(2.0 / fan_in), size=shape)
    return params


def forward(params, x):
    """Training forward pass: returns logits [N,10] and the caches for backward."""
    p = params
    h, c1 = conv_forward(x, p["conv1.weight"], p["conv1.bias"])   # [N,8,8,8]
    h, r1 = relu_forward(h)
    h, m1 = maxpool_forward(h)                                     # [N,8,4,4]
    h, c2 = conv_forward(h, p["conv2.weight"], p["conv2.bias"])   # [N,16,4,4]
    h, r2 = relu_forward(h)
    h, m2 = maxpool_forward(h)                                     # [N,16,2,2]
    pooled_shape = h.shape
    h = h.reshape(h.shape[0], -1)  # ONNX Flatten(axis=1): C,H,W order -> [N,64]
    h, g1 = gemm_forward(h, p["fc1.weight"], p["fc1.bias"])       # [N,32]
    h, r3 = relu_forward(h)
    logits, g2 = gemm_forward(h, p["fc2.weight"], p["fc2.bias"])  # [N,10]
    return logits, (c1, r1, m1, c2, r2, m2, pooled_shape, g1, r3, g2)


def backward(dlogits, caches):
    c1, r1, m1, c2, r2, m2, pooled_shape, g1, r3, g2 = caches
    grads = {}
    d, grads["fc2.weight"], grads["fc2.bias"] = gemm_backward(dlogits, g2)
    d = relu_backward(d, r3)
    d, grads["fc1.weight"], grads["fc1.bias"] = gemm_backward(d, g1)
    d = d.reshape(pooled_shape)
    d = maxpool_backward(d, m2)
    d = relu_backward(d, r2)
    d, grads["conv2.weight"], grads["conv2.bias"] = conv_backward(d, c2)
    d = maxpool_backward(d, m1)
    d = relu_backward(d, r1)
    _, grads["conv1.weight"], grads["conv1.bias"] = conv_backward(d, c1)
    return grads


def predict_probs(params, x):
    logits, _ = forward(params, x)
    return softmax(logits)


def accuracy(params, x, y):
    return float((predict_probs(params, x).argmax(axis=1) == y).mean())


# ---------------------------------------------------------------- training


class Adam:
    def __init__(self, params, lr, beta1=0.9, beta2=0.999, eps=1e-8):
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}
        self.t = 0

    def step(self, params, grads):
        self.t += 1
        correction1 = 1.0 - self.beta1 ** self.t
        correction2 = 1.0 - self.beta2 ** self.t
        for k in params:
            self.m[k] = self.beta1 * self.m[k] + (1.0 - self.beta1) * grads[k]
            self.v[k] = self.beta2 * self.v[k] + (1.0 - self.beta2) * grads[k] ** 2
            m_hat = self.m[k] / correction1
            v_hat = self.v[k] / correction2
            params[k] -= self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


def train(x_train, y_train, rng):
    """Mini-batch Adam on softmax cross-entropy, in float64."""
    params = init_params(rng)
    optimizer = Adam(params, LEARNING_RATE)
    n = len(x_train)
    for epoch in range(1, EPOCHS + 1):
        order = rng.permutation(n)
        total_loss = 0.0
        for start in range(0, n, BATCH):
            idx = order[start:start + BATCH]
            logits, caches = forward(params, x_train[idx])
            probs = softmax(logits)
            total_loss -= np.log(probs[np.arange(len(idx)), y_train[idx]] + 1e-12).sum()
            # d(mean cross-entropy)/d(logits) = (softmax - onehot) / batch
            dlogits = probs
            dlogits[np.arange(len(idx)), y_train[idx]] -= 1.0
            dlogits /= len(idx)
            optimizer.step(params, backward(dlogits, caches))
        if epoch % 5 == 0:
            print(f"epoch {epoch:2d}  loss {total_loss / n:.4f}  "
                  f"train acc {accuracy(params, x_train, y_train):.4f}")
    return params


# ---------------------------------------------------------------- export


def build_onnx(params):
    """The graph from the module docstring, weights stored as initializers."""
    nodes = [
        helper.make_node("Conv", ["image", "conv1.weight", "conv1.bias"], ["conv1"],
                         name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["conv1"], ["relu1"], name="relu1"),
        helper.make_node("MaxPool", ["relu1"], ["pool1"], name="pool1",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["pool1", "conv2.weight", "conv2.bias"], ["conv2"],
                         name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["conv2"], ["relu2"], name="relu2"),
        helper.make_node("MaxPool", ["relu2"], ["pool2"], name="pool2",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["pool2"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc1.weight", "fc1.bias"], ["fc1"],
                         name="fc1", transB=1),
        helper.make_node("Relu", ["fc1"], ["relu3"], name="relu3"),
        helper.make_node("Gemm", ["relu3", "fc2.weight", "fc2.bias"], ["logits"],
                         name="fc2", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    initializers = [numpy_helper.from_array(params[name].astype(np.float32), name)
                    for name, _ in PARAM_SHAPES]
    graph = helper.make_graph(
        nodes, "digits_cnn",
        inputs=[helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 1, 8, 8])],
        outputs=[helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])],
        initializer=initializers,
    )
    model = helper.make_model(graph, producer_name="tgc-train_digits_cnn",
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7  # newest IR version onnx 1.12 accepts with opset 13
    model.doc_string = "Small CNN for 8x8 digits (sklearn load_digits), see models/README.md"
    onnx.checker.check_model(model)
    return model


# ------------------------------------------- reference interpreter for the graph
#
# Deliberately written independently of the training layers (direct loops,
# no im2col, reading attributes from the nodes) so that agreement between the
# two is evidence the exported graph means what the training code computed.


def ref_conv(x, w, b, attrs):
    assert attrs["kernel_shape"] == [3, 3] and attrs["strides"] == [1, 1]
    top, left, bottom, right = attrs["pads"]
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    n, _, h, wd = x.shape
    out = np.empty((n, w.shape[0], h, wd), dtype=x.dtype)
    for i in range(h):
        for j in range(wd):
            window = xp[:, :, i:i + 3, j:j + 3]
            out[:, :, i, j] = np.einsum("nckl,mckl->nm", window, w) + b
    return out


def ref_maxpool(x, attrs):
    (kh, kw), (sh, sw) = attrs["kernel_shape"], attrs["strides"]
    n, c, h, w = x.shape
    oh, ow = (h - kh) // sh + 1, (w - kw) // sw + 1
    out = np.empty((n, c, oh, ow), dtype=x.dtype)
    for i in range(oh):
        for j in range(ow):
            out[:, :, i, j] = x[:, :, i * sh:i * sh + kh, j * sw:j * sw + kw].max(axis=(2, 3))
    return out


def ref_gemm(a, b, c, attrs):
    if attrs.get("transB", 0):
        b = b.T
    return a @ b + c


def ref_softmax(x, attrs):
    assert attrs["axis"] == 1 and x.ndim == 2
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def run_graph(model, image):
    """Evaluate the ONNX graph node by node with numpy."""
    values = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    values[model.graph.input[0].name] = image
    for node in model.graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        args = [values[name] for name in node.input]
        if node.op_type == "Conv":
            out = ref_conv(*args, attrs)
        elif node.op_type == "Relu":
            out = np.maximum(args[0], 0)
        elif node.op_type == "MaxPool":
            out = ref_maxpool(*args, attrs)
        elif node.op_type == "Flatten":
            out = args[0].reshape(args[0].shape[0], -1)
        elif node.op_type == "Gemm":
            out = ref_gemm(*args, attrs)
        elif node.op_type == "Softmax":
            out = ref_softmax(*args, attrs)
        else:
            raise NotImplementedError(node.op_type)
        values[node.output[0]] = out.astype(np.float32)
    return values[model.graph.output[0].name]


# ---------------------------------------------------------------- main


def write_samples(model, params32, x_test, y_test):
    os.makedirs(SAMPLES_DIR, exist_ok=True)
    lines = []
    for k in range(NUM_SAMPLES):
        image = x_test[k:k + 1].astype(np.float32)  # [1,1,8,8]
        probs = run_graph(model, image)
        # The graph interpreter and the training forward must agree.
        np.testing.assert_allclose(probs, predict_probs(params32, image), rtol=0, atol=1e-5)
        np.save(os.path.join(SAMPLES_DIR, f"image_{k}.npy"), image)
        np.save(os.path.join(SAMPLES_DIR, f"expected_probs_{k}.npy"), probs.astype(np.float32))
        lines.append(f"image_{k}.npy {y_test[k]} {int(probs.argmax())}\n")
    with open(os.path.join(SAMPLES_DIR, "labels.txt"), "w") as f:
        f.writelines(lines)


def main():
    x_train, x_test, y_train, y_test = load_data()
    rng = np.random.default_rng(SEED)
    params = train(x_train, y_train, rng)

    # Evaluate with the float32 weights that actually get exported.
    params32 = {k: v.astype(np.float32) for k, v in params.items()}
    test_acc = accuracy(params32, x_test.astype(np.float32), y_test)
    n_params = sum(v.size for v in params32.values())
    print(f"parameters: {n_params}")
    print(f"test accuracy: {test_acc:.4f} ({len(y_test)} test images)")
    if test_acc < MIN_ACCURACY:
        raise SystemExit(f"test accuracy {test_acc:.4f} below {MIN_ACCURACY}")

    model = build_onnx(params)
    # Whole test set through the graph interpreter vs. the training forward.
    graph_probs = np.concatenate([run_graph(model, x.astype(np.float32)[None]) for x in x_test])
    train_probs = predict_probs(params32, x_test.astype(np.float32))
    max_diff = float(np.abs(graph_probs - train_probs).max())
    print(f"graph vs training forward, max |diff| over test set: {max_diff:.2e}")
    assert max_diff < 1e-5

    onnx.save(model, ONNX_PATH)
    write_samples(model, params32, x_test, y_test)
    print(f"wrote {os.path.relpath(ONNX_PATH)} and {os.path.relpath(SAMPLES_DIR)}/")


if __name__ == "__main__":
    main()
