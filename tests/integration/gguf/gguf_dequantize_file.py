#!/usr/bin/python3
# A copy of a GGUF file with every tensor dequantized to f32 by gguf-py (metadata unchanged):
# llama.cpp's f32 logits of this copy are what tgc must compute exactly for the quantized file,
# since tgc dequantizes weights exactly and keeps activations in f32.
# usage: PYTHONPATH=<llama.cpp>/gguf-py gguf_dequantize_file.py IN.gguf OUT.gguf
import sys
import numpy as np
import gguf

r = gguf.GGUFReader(sys.argv[1])
w = gguf.GGUFWriter(sys.argv[2], r.fields['general.architecture'].contents())
for name, f in r.fields.items():
    if name.startswith('GGUF.') or name == 'general.architecture':
        continue
    t = f.types[0]
    w.add_key_value(name, f.contents(), t, sub_type=f.types[-1] if t == gguf.GGUFValueType.ARRAY else None)
for t in r.tensors:
    a = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
    w.add_tensor(t.name, a.reshape([int(x) for x in reversed(t.shape)]))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
