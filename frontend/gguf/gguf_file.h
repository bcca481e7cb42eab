// A GGUF file (v2 and v3, little-endian), mapped read-only: the metadata key/value pairs and the
// tensor table. Every count, length and offset is checked against the file before it is used,
// so a damaged or hostile file gets a one-line tgc::Error naming the file, never a crash or an
// allocation larger than the file.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "frontend/gguf/ggml_types.h"
#include "ir/bytes.h"

namespace tgc {

enum class GgufValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
std::string gguf_value_type_name(GgufValueType t);

// One metadata value. Integers keep their sign in `i` (signed types) or `u` (unsigned, bool).
struct GgufValue {
  GgufValueType type = GgufValueType::U8;
  GgufValueType elem_type = GgufValueType::U8;  // arrays only
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0;
  std::string s;
  // Arrays: `count` elements; numbers stay in the file's mapping (`raw`, valid while the
  // GgufFile lives), strings and nested arrays are read into `items`.
  uint64_t count = 0;
  const uint8_t* raw = nullptr;
  std::vector<GgufValue> items;

  GgufValue item(uint64_t k) const;  // element k of an array

  bool is_int() const;
  bool is_number() const { return is_int() || type == GgufValueType::F32 || type == GgufValueType::F64; }
  int64_t as_int() const;    // an integer (or bool) value; throws otherwise
  double as_double() const;  // any number
  std::string str() const;   // for listings; long arrays abbreviated
};

struct GgufTensorInfo {
  std::string name;
  GgmlType type;
  std::vector<int64_t> dims;  // ggml order: dims[0] is the contiguous (row) dim
  uint64_t offset;            // from the start of the data section
  uint64_t nbytes;            // size in the file (whole blocks)
  int64_t numel() const;
};

class GgufFile {
 public:
  // Throws tgc::Error naming the file and what is wrong with it.
  static GgufFile open(const std::string& path);

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }

  const GgufValue* find(const std::string& key) const;
  const GgufTensorInfo* find_tensor(const std::string& name) const;
  // Typed metadata lookups: an error naming the key when it is missing or of another kind.
  int64_t get_int(const std::string& key) const;
  int64_t get_int(const std::string& key, int64_t fallback) const;
  double get_float(const std::string& key, double fallback) const;
  std::string get_string(const std::string& key) const;
  // The bytes of a tensor, mapped (never copied).
  std::shared_ptr<const Bytes> tensor_bytes(const GgufTensorInfo& t) const;

 private:
  std::string path_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::map<std::string, size_t> kv_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t> tensor_index_;
  std::shared_ptr<const Bytes> map_;  // the whole file: numeric metadata arrays point into it
};

// `tgc inspect --stage=meta`: the header, every metadata pair (arrays abbreviated) and the
// tensor table (name, type, shape in ggml order, offset).
std::string describe_gguf(const GgufFile& f);

}  // namespace tgc
