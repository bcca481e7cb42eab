// OpContext helpers and TensorProto decoding.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unordered_set>

#include "frontend/onnx/onnx_ops.h"
#include "ir/interpret.h"
#include "ir/scalar.h"

namespace tgc {

DType dtype_from_onnx(int t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return DType::F32;
    case onnx::TensorProto::UINT8: return DType::U8;
    case onnx::TensorProto::INT8: return DType::I8;
    case onnx::TensorProto::UINT16: return DType::U16;
    case onnx::TensorProto::INT16: return DType::I16;
    case onnx::TensorProto::INT32: return DType::I32;
    case onnx::TensorProto::INT64: return DType::I64;
    case onnx::TensorProto::BOOL: return DType::Bool;
    case onnx::TensorProto::FLOAT16: return DType::F16;
    case onnx::TensorProto::DOUBLE: return DType::F64;
    case onnx::TensorProto::UINT32: return DType::U32;
    case onnx::TensorProto::UINT64: return DType::U64;
    case onnx::TensorProto::BFLOAT16: return DType::BF16;
    default:
      throw Error("unsupported ONNX element type " +
                  (onnx::TensorProto_DataType_IsValid(t)
                       ? onnx::TensorProto_DataType_Name(onnx::TensorProto_DataType(t)) + " (" + std::to_string(t) + ")"
                       : std::to_string(t)));
  }
}

// Element count of `dims`, checked before anything is allocated: corrupt files carry any dims.
int64_t checked_numel(const Shape& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) throw Error("dims " + shape_str(dims) + " contain a negative size");
    if (d > 0 && n > (int64_t(1) << 40) / d) throw Error("dims " + shape_str(dims) + " hold more than 2^40 elements");
    n *= d;
  }
  return n;
}

namespace {
// A tensor's external data (ONNX's data_location EXTERNAL), mapped from its file, never read.
std::shared_ptr<const Bytes> external_data(const onnx::TensorProto& p, const std::string& model_dir, size_t nbytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    try {
      if (kv.key() == "location")
        location = kv.value();
      else if (kv.key() == "offset")
        offset = std::stoll(kv.value());
      else if (kv.key() == "length")
        length = std::stoll(kv.value());
    } catch (const std::exception&) {
      throw Error("external data " + kv.key() + " '" + kv.value() + "' is not a number");
    }
  }
  if (length >= 0 && size_t(length) != nbytes) throw Error("external data length does not match the tensor shape");
  if (offset < 0) throw Error("external data offset " + std::to_string(offset) + " is negative");
  // As ONNX's checker: a relative path that stays in the model's folder (no "/etc/...", no "../").
  // Checked lexically, so a symlinked model folder (a download cache) still works.
  std::filesystem::path rel = std::filesystem::path(location).lexically_normal();
  if (location.empty() || rel.is_absolute() || rel.has_root_name() || *rel.begin() == "..")
    throw Error("external data location '" + location + "' is outside the model's folder");
  std::string file = (std::filesystem::path(model_dir) / rel).string();
  return Bytes::map(file, uint64_t(offset), nbytes);
}

// The bytes of `p`'s data by its dtype and shape (the element count checked).
size_t proto_nbytes(const onnx::TensorProto& p) {
  return size_t(checked_numel(Shape(p.dims().begin(), p.dims().end())) * dtype_size(dtype_from_onnx(p.data_type())));
}
}  // namespace

Tensor weight_from_proto(Graph& g, const std::string& name, const onnx::TensorProto& p, const std::string& model_dir) {
  if (p.data_location() != onnx::TensorProto::EXTERNAL)
    return Tensor::weight(g, name, host_tensor_from_proto(p, model_dir));
  return Tensor::weight(g, name, dtype_from_onnx(p.data_type()), Shape(p.dims().begin(), p.dims().end()),
                        external_data(p, model_dir, proto_nbytes(p)));
}

HostTensor host_tensor_from_proto(const onnx::TensorProto& p, const std::string& model_dir) {
  DType dtype = dtype_from_onnx(p.data_type());
  Shape dims(p.dims().begin(), p.dims().end());
  int64_t n = checked_numel(dims);
  size_t nbytes = size_t(n * dtype_size(dtype));
  if (p.data_location() != onnx::TensorProto::EXTERNAL) {
    if (p.has_raw_data() && p.raw_data().size() != nbytes)
      throw Error("raw data has " + std::to_string(p.raw_data().size()) + " bytes, shape needs " +
                  std::to_string(nbytes));
    int64_t values =
        p.float_data_size() + p.double_data_size() + p.int32_data_size() + p.int64_data_size() + p.uint64_data_size();
    if (!p.has_raw_data() && values != n)
      throw Error("tensor data has " + std::to_string(values) + " values, shape needs " + std::to_string(n));
  }
  HostTensor t(dtype, dims);
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    t.bytes = external_data(p, model_dir, nbytes)->to_vector();
    return t;
  }
  if (p.has_raw_data()) {
    std::copy(p.raw_data().begin(), p.raw_data().end(), t.bytes.begin());
    return t;
  }
  auto fill = [&](const auto& field, auto convert) {
    if (field.size() != n)
      throw Error("tensor data has " + std::to_string(field.size()) + " values, shape needs " + std::to_string(n));
    for (int64_t i = 0; i < n; ++i) convert(i, field[int(i)]);
  };
  switch (t.dtype) {
    case DType::F32: fill(p.float_data(), [&](int64_t i, float v) { t.set(i, v); }); break;
    case DType::F64: fill(p.double_data(), [&](int64_t i, double v) { t.set(i, v); }); break;
    case DType::I64:
      fill(p.int64_data(), [&](int64_t i, int64_t v) { store_num(t.dtype, &t.bytes[size_t(i) * 8], Num{0, v}); });
      break;
    case DType::U32:
    case DType::U64:
      fill(p.uint64_data(), [&](int64_t i, uint64_t v) {
        store_num(t.dtype, &t.bytes[size_t(i * dtype_size(t.dtype))], Num{0, int64_t(v)});
      });
      break;
    case DType::F16:
    case DType::BF16:  // int32_data holds the 16-bit patterns
      fill(p.int32_data(), [&](int64_t i, int32_t v) {
        uint16_t h = uint16_t(v);
        std::memcpy(&t.bytes[size_t(i) * 2], &h, 2);
      });
      break;
    default:
      fill(p.int32_data(),
           [&](int64_t i, int32_t v) { store_num(t.dtype, &t.bytes[size_t(i * dtype_size(t.dtype))], Num{0, v}); });
  }
  return t;
}

const Tensor& OpContext::in(size_t i) const {
  if (!has(i)) fail("missing input " + std::to_string(i));
  return *inputs_[i];
}

void OpContext::not_a_tensor(size_t i) const {
  fail("input " + std::to_string(i) + " ('" + node.input(int(i)) + "') is a sequence, but " + node.op_type() +
       " takes a tensor there");
}

const OpContext::Sequence& OpContext::seq_in(size_t i) const {
  if (!is_sequence(i))
    fail("input " + std::to_string(i) + (i < size_t(node.input_size()) ? " ('" + node.input(int(i)) + "')" : "") +
         (has(i) ? " is a tensor, but " + node.op_type() + " takes a sequence there" : " is missing"));
  return *seq_inputs_[i];
}

std::vector<Tensor> OpContext::all_inputs() const {
  std::vector<Tensor> r;
  for (size_t i = 0; i < inputs_.size(); ++i) r.push_back(in(i));
  return r;
}

bool OpContext::is_constant(const Tensor& t) const {
  for (const UOp* u : toposort({t.uop()}))
    if (u->op == Op::Buffer && !g.buffer(u->ival()).data) return false;
  return true;
}

HostTensor OpContext::constant(const Tensor& t) const { return interpret(g, {t.uop()}, {})[0]; }

bool OpContext::is_constant(size_t i) const { return is_constant(in(i)); }

HostTensor OpContext::constant(size_t i) const {
  if (!is_constant(i))
    fail("input " + std::to_string(i) + " ('" + node.input(int(i)) +
         "') must be a compile-time constant, but depends on a model input");
  return constant(in(i));
}

std::vector<double> OpContext::floats(size_t i) const {
  HostTensor h = constant(i);
  std::vector<double> r(size_t(h.numel()));
  for (int64_t k = 0; k < h.numel(); ++k) r[size_t(k)] = h.get(k);
  return r;
}

const onnx::AttributeProto* node_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}
int64_t node_attr_int(const onnx::NodeProto& n, const std::string& name, int64_t def) {
  const auto* a = node_attr(n, name);
  return a ? a->i() : def;
}
std::string node_attr_string(const onnx::NodeProto& n, const std::string& name, const std::string& def) {
  const auto* a = node_attr(n, name);
  return a ? a->s() : def;
}

const onnx::AttributeProto* OpContext::find(const std::string& name) const { return node_attr(node, name); }

int64_t OpContext::attr_int(const std::string& name, int64_t def) const { return node_attr_int(node, name, def); }
double OpContext::attr_float(const std::string& name, double def) const {
  const auto* a = find(name);
  return a ? a->f() : def;
}
std::string OpContext::attr_string(const std::string& name, const std::string& def) const {
  return node_attr_string(node, name, def);
}
std::vector<int64_t> OpContext::attr_ints(const std::string& name, std::vector<int64_t> def) const {
  const auto* a = find(name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : def;
}
std::vector<double> OpContext::attr_floats(const std::string& name) const {
  const auto* a = find(name);
  return a ? std::vector<double>(a->floats().begin(), a->floats().end()) : std::vector<double>{};
}
std::vector<std::string> OpContext::attr_strings(const std::string& name) const {
  const auto* a = find(name);
  return a ? std::vector<std::string>(a->strings().begin(), a->strings().end()) : std::vector<std::string>{};
}
const onnx::TensorProto* OpContext::attr_tensor(const std::string& name) const {
  const auto* a = find(name);
  return a && a->has_t() ? &a->t() : nullptr;
}

const onnx::GraphProto* OpContext::attr_graph(const std::string& name) const {
  const auto* a = find(name);
  return a && a->has_g() ? &a->g() : nullptr;
}

}  // namespace tgc
