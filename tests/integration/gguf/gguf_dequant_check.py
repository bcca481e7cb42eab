#!/usr/bin/python3
# Dequantization exactness against gguf-py (llama.cpp's own Python reader), per block type.
#   gguf_dequant_check.py make OUT.gguf        a GGUF with one tensor per type tgc reads: random
#                                              blocks (every bit pattern of the quants) with
#                                              random finite f16 scales
#   gguf_dequant_check.py check FILE.gguf DIR  DIR/{interp,cpu}/NAME.npy (tests/integration/gguf/gguf_dequant.cpp)
#                                              must equal gguf-py's dequantize bit for bit, and
#                                              NAME.int8 (the int8 matmul of q8_0 activations
#                                              NAME.act_*) the product of the dequantized
#                                              operands up to f32 rounding
# Needs PYTHONPATH=<llama.cpp>/gguf-py.
import sys
import numpy as np
import gguf
from gguf import GGMLQuantizationType as T

# type -> (f16 scale fields as byte offsets in a block)
SCALES = {T.Q8_0: [0], T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2],
          T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208]}
ROWS = 3

def make(path):
    rng = np.random.default_rng(5)
    w = gguf.GGUFWriter(path, 'dequant-test')
    w.add_tensor('f32', rng.standard_normal((ROWS, 64)).astype(np.float32))
    w.add_tensor('f16', rng.standard_normal((ROWS, 64)).astype(np.float16))
    bf = (rng.standard_normal((ROWS, 64)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    w.add_tensor('bf16', bf, raw_shape=(ROWS, 64), raw_dtype=T.BF16)
    for t, scales in SCALES.items():
        block_elems, block_bytes = gguf.GGML_QUANT_SIZES[t]
        nb = 2 if block_elems == 256 else 4
        raw = rng.integers(0, 256, (ROWS, nb, block_bytes), dtype=np.uint8)
        for at in scales:
            d = rng.uniform(-2, 2, (ROWS, nb)).astype(np.float16)
            raw[:, :, at:at + 2] = d.view(np.uint8).reshape(ROWS, nb, 2)
        w.add_tensor(t.name.lower(), raw.reshape(ROWS, nb * block_bytes), raw_shape=raw.reshape(ROWS, -1).shape, raw_dtype=t)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()

def check(path, d):
    r = gguf.GGUFReader(path)
    bad = 0
    for t in r.tensors:
        want = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(ROWS, -1)
        for where in ('interp', 'cpu'):
            got = np.load(f'{d}/{where}/{t.name}.npy')
            same = got.shape == want.shape and np.array_equal(got.view(np.uint32), want.view(np.uint32))
            if not same:
                bad += 1
                diff = np.abs(got.astype(np.float64) - want).max() if got.shape == want.shape else 'shape ' + str(got.shape)
                print(f'FAIL {t.name} ({where}): {np.sum(got != want) if got.shape == want.shape else "-"} of {want.size} values differ, max |diff| {diff}')
            else:
                print(f'ok   {t.name} ({where}): {want.size} values equal gguf-py bit for bit')
            bad += check_int8(d, where, t.name, want)
    sys.exit(1 if bad else 0)

def check_int8(d, where, name, w):
    import os
    if not os.path.exists(f'{d}/{where}/{name}.int8.npy'):
        return 0
    got = np.load(f'{d}/{where}/{name}.int8.npy').astype(np.float64)
    q = np.load(f'{d}/{where}/{name}.act_words.npy').view(np.int8).astype(np.float64)  # [n, nb, 32]
    a = (q * np.load(f'{d}/{where}/{name}.act_scale.npy')[:, :, None]).reshape(got.shape[0], -1)
    want = a @ w.astype(np.float64).T
    err = np.abs(got - want).max() / (np.abs(a) @ np.abs(w.astype(np.float64)).T).max()
    ok = got.shape == want.shape and err < 1e-6
    print(f'{"ok  " if ok else "FAIL"} {name}.int8 ({where}): int8 matmul vs the dequantized product, max |diff| / max sum|terms| {err:.2e}')
    return 0 if ok else 1

if sys.argv[1] == 'make': make(sys.argv[2])
else: check(sys.argv[2], sys.argv[3])
