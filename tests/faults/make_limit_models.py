#!/usr/bin/python3
# Models with absurd sizes and hostile external data for tests/faults/compile_faults.sh.
# usage: make_limit_models.py OUT_DIR
import os, sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

out = sys.argv[1]
os.makedirs(out, exist_ok=True)

def relu(name, shape):
    g = helper.make_graph([helper.make_node('Relu', ['x'], ['y'])], name,
                          [helper.make_tensor_value_info('x', TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info('y', TensorProto.FLOAT, shape)])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)]), f'{out}/{name}.onnx')

relu('dim_2e40', [1 << 40])
relu('overflow_product', [1 << 31, 1 << 31, 1 << 31])   # 2^93 elements: overflows int64
relu('dim_max', [(1 << 63) - 1, 2])

def external(name, location):
    w = numpy_helper.from_array(np.ones(4, np.float32), 'w')
    w.ClearField('raw_data')
    w.data_location = TensorProto.EXTERNAL
    e = w.external_data.add(); e.key, e.value = 'location', location
    g = helper.make_graph([helper.make_node('Add', ['x', 'w'], ['y'])], name,
                          [helper.make_tensor_value_info('x', TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info('y', TensorProto.FLOAT, [4])], [w])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)]), f'{out}/{name}.onnx')

with open(f'{out}/weights.bin', 'wb') as f: f.write(np.ones(4, np.float32).tobytes())
external('ext_inside', 'weights.bin')
external('ext_absolute', os.path.abspath(f'{out}/weights.bin'))
external('ext_dotdot', '../' + os.path.basename(out) + '/weights.bin')
external('ext_sub_dotdot', 'sub/../../weights.bin')

# A chain of 30k nodes: the passes recurse along it (8 MiB of stack held about 20k).
n = 30000
nodes = [helper.make_node('Relu' if i % 2 == 0 else 'Neg', [f't{i}'], [f't{i + 1}']) for i in range(n)]
g = helper.make_graph(nodes, 'chain', [helper.make_tensor_value_info('t0', TensorProto.FLOAT, [4])],
                      [helper.make_tensor_value_info(f't{n}', TensorProto.FLOAT, [4])])
save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)]), f'{out}/chain_30k.onnx')
