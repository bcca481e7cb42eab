#include "frontend/gguf/gguf_file.h"

#include <sys/stat.h>

#include <cstring>
#include <limits>
#include <sstream>

#include "ir/error.h"

namespace tgc {

namespace {
constexpr int kMaxArrayDepth = 8;  // nested arrays deeper than this are refused (recursion bound)
constexpr uint32_t kMaxDims = 4;   // GGML_MAX_DIMS

// Fixed size of a scalar value type; 0 for strings and arrays.
uint64_t scalar_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8:
    case GgufValueType::I8:
    case GgufValueType::Bool: return 1;
    case GgufValueType::U16:
    case GgufValueType::I16: return 2;
    case GgufValueType::U32:
    case GgufValueType::I32:
    case GgufValueType::F32: return 4;
    case GgufValueType::U64:
    case GgufValueType::I64:
    case GgufValueType::F64: return 8;
    default: return 0;
  }
}

bool known_value_type(uint32_t t) { return t <= uint32_t(GgufValueType::F64); }

// Decodes one scalar of type t at p (little-endian host assumed, as everywhere in tgc).
GgufValue decode_scalar(GgufValueType t, const uint8_t* p) {
  GgufValue v;
  v.type = t;
  auto rd = [&](auto x) {
    std::memcpy(&x, p, sizeof x);
    return x;
  };
  switch (t) {
    case GgufValueType::U8: v.u = rd(uint8_t{}); break;
    case GgufValueType::I8: v.i = rd(int8_t{}); break;
    case GgufValueType::U16: v.u = rd(uint16_t{}); break;
    case GgufValueType::I16: v.i = rd(int16_t{}); break;
    case GgufValueType::U32: v.u = rd(uint32_t{}); break;
    case GgufValueType::I32: v.i = rd(int32_t{}); break;
    case GgufValueType::U64: v.u = rd(uint64_t{}); break;
    case GgufValueType::I64: v.i = rd(int64_t{}); break;
    case GgufValueType::F32: v.f = rd(float{}); break;
    case GgufValueType::F64: v.f = rd(double{}); break;
    case GgufValueType::Bool: v.u = rd(uint8_t{}) != 0; break;
    default: break;
  }
  return v;
}

// A bounds-checked cursor over the mapped file.
class Reader {
 public:
  Reader(const std::string& path, const uint8_t* data, uint64_t size) : path_(path), p_(data), size_(size) {}
  uint64_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }
  const uint8_t* here() const { return p_ + pos_; }

  [[noreturn]] void fail(const std::string& what) const { throw Error(path_ + ": " + what); }
  void need(uint64_t n, const std::string& what) const {
    if (n > left())
      fail(what + " at byte " + std::to_string(pos_) + " needs " + std::to_string(n) + " bytes, the file has " +
           std::to_string(left()) + " left (truncated or a lying size)");
  }
  template <class T>
  T get(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_ + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  void skip(uint64_t n, const std::string& what) {
    need(n, what);
    pos_ += n;
  }
  std::string string(const std::string& what) {
    uint64_t n = get<uint64_t>(what + " length");
    need(n, what + " (" + std::to_string(n) + " bytes)");
    std::string s(reinterpret_cast<const char*>(p_ + pos_), size_t(n));
    pos_ += n;
    return s;
  }

  GgufValue value(GgufValueType t, const std::string& what, int depth) {
    if (t == GgufValueType::String) {
      GgufValue v;
      v.type = t;
      v.s = string(what);
      return v;
    }
    if (t != GgufValueType::Array) {
      need(scalar_size(t), what);
      GgufValue v = decode_scalar(t, here());
      pos_ += scalar_size(t);
      return v;
    }
    if (depth >= kMaxArrayDepth) fail(what + ": arrays nested deeper than " + std::to_string(kMaxArrayDepth));
    GgufValue v;
    v.type = t;
    uint32_t et = get<uint32_t>(what + " element type");
    if (!known_value_type(et)) fail(what + ": unknown array element type " + std::to_string(et));
    v.elem_type = GgufValueType(et);
    v.count = get<uint64_t>(what + " count");
    // The smallest encoding of one element bounds the count by the bytes left: no lying count
    // reaches an allocation.
    uint64_t min_size = scalar_size(v.elem_type)               ? scalar_size(v.elem_type)
                        : v.elem_type == GgufValueType::String ? 8
                                                               : 12;
    if (v.count > left() / min_size)
      fail(what + ": array of " + std::to_string(v.count) + " " + gguf_value_type_name(v.elem_type) +
           " values does not fit in the " + std::to_string(left()) + " bytes left");
    if (scalar_size(v.elem_type)) {  // numbers stay in the mapping, decoded on access
      v.raw = here();
      pos_ += v.count * min_size;
      return v;
    }
    v.items.reserve(size_t(v.count));
    for (uint64_t k = 0; k < v.count; ++k)
      v.items.push_back(value(v.elem_type, what + "[" + std::to_string(k) + "]", depth + 1));
    return v;
  }

 private:
  const std::string& path_;
  const uint8_t* p_;
  uint64_t size_, pos_ = 0;
};

uint64_t file_size(const std::string& path) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) throw Error(path + ": cannot open: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw Error(path + ": not a regular file");
  return uint64_t(st.st_size);
}
}  // namespace

std::string gguf_value_type_name(GgufValueType t) {
  static const char* kNames[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                 "bool", "string", "array", "u64", "i64", "f64"};
  return uint32_t(t) <= uint32_t(GgufValueType::F64) ? kNames[uint32_t(t)] : "type " + std::to_string(uint32_t(t));
}

bool GgufValue::is_int() const {
  switch (type) {
    case GgufValueType::U8:
    case GgufValueType::I8:
    case GgufValueType::U16:
    case GgufValueType::I16:
    case GgufValueType::U32:
    case GgufValueType::I32:
    case GgufValueType::U64:
    case GgufValueType::I64:
    case GgufValueType::Bool: return true;
    default: return false;
  }
}

int64_t GgufValue::as_int() const {
  if (!is_int()) throw Error("a " + gguf_value_type_name(type) + " where an integer is expected");
  bool is_signed = type == GgufValueType::I8 || type == GgufValueType::I16 || type == GgufValueType::I32 ||
                   type == GgufValueType::I64;
  if (!is_signed && u > uint64_t(std::numeric_limits<int64_t>::max()))
    throw Error("integer " + std::to_string(u) + " out of range");
  return is_signed ? i : int64_t(u);
}

double GgufValue::as_double() const {
  if (type == GgufValueType::F32 || type == GgufValueType::F64) return f;
  return double(as_int());
}

GgufValue GgufValue::item(uint64_t k) const {
  if (type != GgufValueType::Array || k >= count) throw Error("array index " + std::to_string(k) + " out of range");
  if (raw) return decode_scalar(elem_type, raw + k * scalar_size(elem_type));
  return items[size_t(k)];
}

std::string GgufValue::str() const {
  std::ostringstream o;
  switch (type) {
    case GgufValueType::String: {
      std::string t = s.size() > 80 ? s.substr(0, 77) + "..." : s;
      o << '"';
      for (char c : t) {
        if (c == '\n')
          o << "\\n";
        else if (c == '"')
          o << "\\\"";
        else if (static_cast<unsigned char>(c) < 0x20)
          o << "\\x" << std::hex << int(c) << std::dec;
        else
          o << c;
      }
      o << '"';
      break;
    }
    case GgufValueType::Array: {
      constexpr uint64_t kShown = 6;
      o << "[";
      for (uint64_t k = 0; k < count && k < kShown; ++k) o << (k ? ", " : "") << item(k).str();
      if (count > kShown) o << ", ... (" << count << " " << gguf_value_type_name(elem_type) << ")";
      o << "]";
      break;
    }
    case GgufValueType::F32:
    case GgufValueType::F64: o << f; break;
    case GgufValueType::Bool: o << (u ? "true" : "false"); break;
    default: o << as_int(); break;
  }
  return o.str();
}

int64_t GgufTensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

GgufFile GgufFile::open(const std::string& path) {
  GgufFile f;
  f.path_ = path;
  uint64_t size = file_size(path);
  if (size < 4) throw Error(path + ": too short for a GGUF file (" + std::to_string(size) + " bytes)");
  f.map_ = Bytes::map(path, 0, size);
  Reader r(path, f.map_->data(), size);
  if (std::memcmp(r.here(), "GGUF", 4) != 0) r.fail("not a GGUF file (no GGUF magic)");
  r.skip(4, "magic");
  f.version_ = r.get<uint32_t>("version");
  if (f.version_ == 1) r.fail("GGUF version 1 is not supported (v2 and v3 are)");
  if (f.version_ == 0x02000000u || f.version_ == 0x03000000u)
    r.fail("a big-endian GGUF file; tgc reads little-endian ones");
  if (f.version_ != 2 && f.version_ != 3)
    r.fail("unknown GGUF version " + std::to_string(f.version_) + " (v2 and v3 are supported)");
  uint64_t n_tensors = r.get<uint64_t>("tensor count");
  uint64_t n_kv = r.get<uint64_t>("metadata count");
  // Each pair takes at least 13 bytes (key length, type, one byte), each tensor info 24.
  if (n_kv > r.left() / 13) r.fail("metadata count " + std::to_string(n_kv) + " does not fit in the file");
  if (n_tensors > r.left() / 24) r.fail("tensor count " + std::to_string(n_tensors) + " does not fit in the file");

  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key = r.string("metadata key " + std::to_string(k));
    uint32_t t = r.get<uint32_t>("type of '" + key + "'");
    if (!known_value_type(t)) r.fail("metadata '" + key + "' has unknown value type " + std::to_string(t));
    GgufValue v = r.value(GgufValueType(t), "metadata '" + key + "'", 0);
    if (!f.kv_index_.emplace(key, f.kv_.size()).second) r.fail("metadata key '" + key + "' appears twice");
    f.kv_.emplace_back(std::move(key), std::move(v));
  }
  if (const GgufValue* a = f.find("general.alignment")) {
    if (a->type != GgufValueType::U32) r.fail("general.alignment is a " + gguf_value_type_name(a->type) + ", not u32");
    if (a->u == 0 || (a->u & (a->u - 1)) != 0)
      r.fail("general.alignment " + std::to_string(a->u) + " is not a power of two");
    f.alignment_ = a->u;
  }

  for (uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensorInfo ti;
    ti.name = r.string("tensor info " + std::to_string(k) + " name");
    const std::string what = "tensor '" + ti.name + "'";
    uint32_t nd = r.get<uint32_t>(what + " rank");
    if (nd == 0 || nd > kMaxDims) r.fail(what + " has rank " + std::to_string(nd) + " (1 to 4 allowed)");
    int64_t numel = 1;
    for (uint32_t d = 0; d < nd; ++d) {
      uint64_t n = r.get<uint64_t>(what + " dim");
      if (n > uint64_t(std::numeric_limits<int64_t>::max()) ||
          (n && uint64_t(numel) > uint64_t(std::numeric_limits<int64_t>::max()) / n))
        r.fail(what + " has more elements than fit in 63 bits");
      ti.dims.push_back(int64_t(n));
      numel *= int64_t(n);
    }
    uint32_t type = r.get<uint32_t>(what + " type");
    const GgmlTypeInfo* info = ggml_type_info(type);
    if (!info) r.fail(what + " has unknown tensor type " + std::to_string(type));
    ti.type = GgmlType(type);
    if (ti.dims[0] % info->block_elems != 0)
      r.fail(what + " (" + info->name + ") has rows of " + std::to_string(ti.dims[0]) +
             " elements, not a multiple of its block of " + std::to_string(info->block_elems));
    ti.nbytes = uint64_t(numel / info->block_elems);
    if (ti.nbytes && uint64_t(info->block_bytes) > std::numeric_limits<uint64_t>::max() / ti.nbytes)
      r.fail(what + " is too large");
    ti.nbytes *= uint64_t(info->block_bytes);
    ti.offset = r.get<uint64_t>(what + " offset");
    if (ti.offset % f.alignment_ != 0)
      r.fail(what + " data offset " + std::to_string(ti.offset) + " is not a multiple of the alignment " +
             std::to_string(f.alignment_));
    if (!f.tensor_index_.emplace(ti.name, f.tensors_.size()).second)
      r.fail(what + " appears twice in the tensor table");
    f.tensors_.push_back(std::move(ti));
  }
  f.data_offset_ = (r.pos() + f.alignment_ - 1) / f.alignment_ * f.alignment_;
  for (const GgufTensorInfo& ti : f.tensors_) {
    uint64_t avail = size > f.data_offset_ ? size - f.data_offset_ : 0;
    if (ti.offset > avail || ti.nbytes > avail - ti.offset)
      r.fail("tensor '" + ti.name + "' data (" + std::to_string(ti.nbytes) + " bytes at data offset " +
             std::to_string(ti.offset) + ") runs past the end of the file (" + std::to_string(avail) + " data bytes)");
  }
  return f;
}

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

int64_t GgufFile::get_int(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) throw Error(path_ + ": metadata '" + key + "' is missing");
  if (!v->is_int())
    throw Error(path_ + ": metadata '" + key + "' is a " + gguf_value_type_name(v->type) + ", not an integer");
  try {
    return v->as_int();
  } catch (const Error& e) {
    throw Error(path_ + ": metadata '" + key + "': " + e.what());
  }
}

int64_t GgufFile::get_int(const std::string& key, int64_t fallback) const {
  return find(key) ? get_int(key) : fallback;
}

double GgufFile::get_float(const std::string& key, double fallback) const {
  const GgufValue* v = find(key);
  if (!v) return fallback;
  if (!v->is_number())
    throw Error(path_ + ": metadata '" + key + "' is a " + gguf_value_type_name(v->type) + ", not a number");
  return v->as_double();
}

std::string GgufFile::get_string(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) throw Error(path_ + ": metadata '" + key + "' is missing");
  if (v->type != GgufValueType::String)
    throw Error(path_ + ": metadata '" + key + "' is a " + gguf_value_type_name(v->type) + ", not a string");
  return v->s;
}

std::shared_ptr<const Bytes> GgufFile::tensor_bytes(const GgufTensorInfo& t) const {
  return Bytes::map(path_, data_offset_ + t.offset, t.nbytes);
}

std::string describe_gguf(const GgufFile& f) {
  std::ostringstream o;
  o << "# " << f.path() << ": GGUF v" << f.version() << ", " << f.metadata().size() << " metadata pairs, "
    << f.tensors().size() << " tensors, alignment " << f.alignment() << ", data at byte " << f.data_offset() << "\n";
  for (const auto& [key, v] : f.metadata()) {
    std::string type = gguf_value_type_name(v.type);
    if (v.type == GgufValueType::Array) type += "<" + gguf_value_type_name(v.elem_type) + ">";
    o << key << " (" << type << ") = " << v.str() << "\n";
  }
  o << "# tensors: name, type, shape (ggml order: row length first), data offset, bytes\n";
  for (const GgufTensorInfo& t : f.tensors()) {
    o << t.name << " " << ggml_type_name(t.type) << " [";
    for (size_t d = 0; d < t.dims.size(); ++d) o << (d ? ", " : "") << t.dims[d];
    o << "] " << t.offset << " " << t.nbytes << "\n";
  }
  return o.str();
}

}  // namespace tgc
