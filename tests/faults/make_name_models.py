#!/usr/bin/python3
# Models whose names hold control bytes and bytes that are not UTF-8, for tests/faults/name_faults.sh.
# usage: make_name_models.py OUT_DIR
import os, sys
from onnx import TensorProto, helper, save

out = sys.argv[1]
os.makedirs(out, exist_ok=True)

def model(path, nodes, inputs, outputs):
    g = helper.make_graph(nodes, 'names', inputs, outputs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)])
    # protobuf's python refuses str fields that are not UTF-8; set them as bytes through the
    # serialized form instead: names are written as placeholders, then replaced byte for byte.
    data = m.SerializeToString()
    for placeholder, raw in REPLACE.items():
        assert len(placeholder) == len(raw), placeholder
        data = data.replace(placeholder.encode(), raw)
    with open(f'{out}/{path}', 'wb') as f: f.write(data)

REPLACE = {
    'imXage': b'im\nage',        # a newline in an input name
    'nodeBBB1': b'node\xff\xfe\x1b1',  # not UTF-8, and an escape character, in a node name
    'wCCC': b'w\r\t\x7f',         # a carriage return, a tab and DEL in an initializer's name
    'nXdim': b'n\ndim',           # a newline in a dim's name (a note names it, not an error)
}

# An input name with a newline and a dim without a size: the "dynamic input dims need sizes" error.
model('input_newline.onnx', [helper.make_node('Relu', ['imXage'], ['y'])],
      [helper.make_tensor_value_info('imXage', TensorProto.FLOAT, [4, 'n'])],
      [helper.make_tensor_value_info('y', TensorProto.FLOAT, [4, 'n'])])
# The same input given an unknown dtype (string): "input '...' ..." from the input check.
model('input_newline_string.onnx', [helper.make_node('Identity', ['imXage'], ['y'])],
      [helper.make_tensor_value_info('imXage', TensorProto.STRING, [4])],
      [helper.make_tensor_value_info('y', TensorProto.STRING, [4])])
# A dim named with a newline, bound at run time (--dynamic $'n\ndim=8'): the compile's note names it.
model('dim_newline.onnx', [helper.make_node('Relu', ['x'], ['y'])],
      [helper.make_tensor_value_info('x', TensorProto.FLOAT, [4, 'nXdim'])],
      [helper.make_tensor_value_info('y', TensorProto.FLOAT, [4, 'nXdim'])])
# A node of an unknown op type whose name is not UTF-8.
model('node_bytes.onnx', [helper.make_node('NoSuchOp', ['x'], ['y'], name='nodeBBB1')],
      [helper.make_tensor_value_info('x', TensorProto.FLOAT, [4])],
      [helper.make_tensor_value_info('y', TensorProto.FLOAT, [4])])
# A node whose input is an initializer that is not there (named with control bytes): the op's own
# error about a missing input.
model('missing_input.onnx', [helper.make_node('Add', ['x', 'wCCC'], ['y'], name='nodeBBB1')],
      [helper.make_tensor_value_info('x', TensorProto.FLOAT, [4])],
      [helper.make_tensor_value_info('y', TensorProto.FLOAT, [4])])
# Names that would end the C header's block comment or break its lines (compiled with --shared).
REPLACE['outYY'] = b'o\n*/\xff'
model('header_names.onnx', [helper.make_node('Relu', ['in*/ int broken; /*'], ['outYY'])],
      [helper.make_tensor_value_info('in*/ int broken; /*', TensorProto.FLOAT, [4])],
      [helper.make_tensor_value_info('outYY', TensorProto.FLOAT, [4])])
