#!/usr/bin/python3
# Malformed GGUF files for tests/integration/bad_input.sh, written byte by byte (no gguf-py needed), plus a
# small valid llama model (`tiny_llama.gguf`) and damaged copies of it for the no-crash sweep.
# usage: gen_bad_gguf.py OUT_DIR
import struct, sys, random
import numpy as np

out = sys.argv[1]
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)

def s(x): b = x.encode(); return struct.pack('<Q', len(b)) + b
def kv(key, t, payload): return s(key) + struct.pack('<I', t) + payload
def kv_u32(key, v): return kv(key, U32, struct.pack('<I', v))
def kv_f32(key, v): return kv(key, F32, struct.pack('<f', v))
def kv_str(key, v): return kv(key, STR, s(v))
def tinfo(name, dims, ttype, offset):
    return s(name) + struct.pack('<I', len(dims)) + b''.join(struct.pack('<Q', d) for d in dims) + struct.pack('<IQ', ttype, offset)

def gguf(kvs, infos, data=b'', version=3, n_kv=None, n_t=None, align=32):
    h = b'GGUF' + struct.pack('<IQQ', version, len(infos) if n_t is None else n_t, len(kvs) if n_kv is None else n_kv)
    h += b''.join(kvs) + b''.join(infos)
    h += b'\0' * ((-len(h)) % align)
    return h + data

def save(name, b):
    with open(f'{out}/{name}.gguf', 'wb') as f: f.write(b)

arch = [kv_str('general.architecture', 'llama')]
one_f32 = [tinfo('w', [8], 0, 0)]
save('header_only', b'GGUF' + struct.pack('<I', 3))
save('version1', gguf([], [], version=1))
save('big_endian', b'GGUF' + struct.pack('>IQQ', 3, 0, 0))
save('version7', gguf([], [], version=7))
save('lying_tensor_count', gguf(arch, [], n_t=1 << 60))
save('lying_kv_count', gguf(arch, [], n_kv=1 << 40))
save('lying_string', b'GGUF' + struct.pack('<IQQ', 3, 0, 1) + struct.pack('<Q', 1 << 62) + b'abc' + b'\0' * 64)
save('lying_array', gguf([kv('a', ARR, struct.pack('<IQ', U32, 1 << 50) + b'\0' * 16)], []))
save('unknown_value_type', gguf([kv('x', 99, b'\0' * 8)], []))
save('unknown_array_type', gguf([kv('x', ARR, struct.pack('<IQ', 42, 1) + b'\0' * 8)], []))
nested = struct.pack('<IQ', U8, 0)
for _ in range(12): nested = struct.pack('<IQ', ARR, 1) + nested
save('deep_arrays', gguf([kv('x', ARR, nested)], []))
save('duplicate_key', gguf(arch + arch, []))
save('alignment_48', gguf([kv_u32('general.alignment', 48)], one_f32, b'\0' * 32))
save('alignment_u64', gguf([kv('general.alignment', U64, struct.pack('<Q', 64))], one_f32, b'\0' * 32))
save('unknown_tensor_type', gguf(arch, [tinfo('w', [8], 99, 0)], b'\0' * 32))
save('retired_tensor_type', gguf(arch, [tinfo('w', [8], 4, 0)], b'\0' * 32))
save('rank5', gguf(arch, [tinfo('w', [1, 1, 1, 1, 8], 0, 0)], b'\0' * 32))
save('huge_dims', gguf(arch, [tinfo('w', [1 << 40, 1 << 40], 0, 0)], b'\0' * 32))
save('partial_block', gguf(arch, [tinfo('w', [33], 2, 0)], b'\0' * 64))
save('unaligned_offset', gguf(arch, [tinfo('w', [8], 0, 7)], b'\0' * 64))
save('data_past_end', gguf(arch, [tinfo('w', [64], 0, 0)], b'\0' * 32))
save('offset_past_end', gguf(arch, [tinfo('w', [8], 0, 1 << 62)], b'\0' * 32))
save('duplicate_tensor', gguf(arch, one_f32 + one_f32, b'\0' * 32))
save('gpt2_arch', gguf([kv_str('general.architecture', 'gpt2')], one_f32, b'\0' * 32))
save('no_arch', gguf([], one_f32, b'\0' * 32))

# A small valid llama: V=16 E=8 F=16 L=1 H=2 HKV=1, f32 weights (token_embd q8_0 would need E%32).
V, E, F, H, HKV = 16, 8, 16, 2, 1
hd = E // H
meta = arch + [kv_u32('llama.context_length', 32), kv_u32('llama.embedding_length', E), kv_u32('llama.block_count', 1),
               kv_u32('llama.feed_forward_length', F), kv_u32('llama.attention.head_count', H),
               kv_u32('llama.attention.head_count_kv', HKV), kv_f32('llama.attention.layer_norm_rms_epsilon', 1e-5),
               kv_u32('llama.rope.dimension_count', hd), kv_f32('llama.rope.freq_base', 10000.0)]
rng = np.random.default_rng(0)
tensors = [('token_embd.weight', (V, E)), ('blk.0.attn_norm.weight', (E,)), ('blk.0.attn_q.weight', (E, E)),
           ('blk.0.attn_k.weight', (HKV * hd, E)), ('blk.0.attn_v.weight', (HKV * hd, E)), ('blk.0.attn_output.weight', (E, E)),
           ('blk.0.ffn_norm.weight', (E,)), ('blk.0.ffn_gate.weight', (F, E)), ('blk.0.ffn_up.weight', (F, E)),
           ('blk.0.ffn_down.weight', (E, F)), ('output_norm.weight', (E,))]
infos, data = [], b''
for name, shape in tensors:
    a = rng.standard_normal(shape).astype(np.float32) * 0.3
    infos.append(tinfo(name, list(reversed(shape)), 0, len(data)))
    data += a.tobytes() + b'\0' * ((-a.nbytes) % 32)
save('tiny_llama', gguf(meta, infos, data))
save('missing_tensor', gguf(meta, infos[:-1], data))
bad_shape = list(infos); bad_shape[2] = tinfo('blk.0.attn_q.weight', [E, E + 1], 0, 0)
save('wrong_tensor_shape', gguf(meta, bad_shape, data))
q2k = list(infos); q2k[0] = tinfo('token_embd.weight', [256, V], 10, 0)
save('unsupported_weight_type', gguf([m if not m.startswith(s('llama.embedding_length')) else kv_u32('llama.embedding_length', 256) for m in meta], q2k, data + b'\0' * 84 * V))

good = open(f'{out}/tiny_llama.gguf', 'rb').read()
rnd = random.Random(1)
for i, cut in enumerate(sorted(rnd.sample(range(8, len(good) - 1), 40))):
    with open(f'{out}/gtrunc_{i}.gguf', 'wb') as f: f.write(good[:cut])
header_end = good.find(b'token_embd') + 200  # flips in the metadata and tensor table, where parsing happens
for i in range(60):
    b = bytearray(good)
    for _ in range(rnd.randint(1, 4)):
        b[rnd.randrange(4, header_end)] = rnd.randrange(256)
    with open(f'{out}/gflip_{i}.gguf', 'wb') as f: f.write(bytes(b))
