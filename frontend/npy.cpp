#include "frontend/npy.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "ir/error.h"

namespace tgc {

namespace {
struct Descr {
  const char* code;
  DType dtype;
};
constexpr Descr kDescrs[] = {
    {"<f4", DType::F32}, {"<f8", DType::F64}, {"<f2", DType::F16}, {"|b1", DType::Bool},
    {"|i1", DType::I8},  {"<i2", DType::I16}, {"<i4", DType::I32}, {"<i8", DType::I64},
    {"|u1", DType::U8},  {"<u2", DType::U16}, {"<u4", DType::U32}, {"<u8", DType::U64},
};

// The value of 'key' in the header dict: a tuple's inside, a quoted string, or a bare word; ""
// when the key or its value is missing.
std::string header_field(const std::string& h, const std::string& key) {
  size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) return "";
  size_t colon = h.find(':', k);
  size_t start = colon == std::string::npos ? colon : h.find_first_not_of(' ', colon + 1);
  if (start == std::string::npos) return "";
  size_t end = std::string::npos;
  if (h[start] == '(')
    end = h.find(')', ++start);
  else if (h[start] == '\'')
    end = h.find('\'', ++start);
  else
    end = h.find_first_of(",}", start);
  return end == std::string::npos ? "" : h.substr(start, end - start);
}

// The dims of a shape tuple's inside ("3, 4," or ""); -1 entries mark a malformed one.
bool parse_shape(const std::string& s, Shape& shape) {
  std::stringstream dims(s);
  std::string tok;
  while (std::getline(dims, tok, ',')) {
    size_t b = tok.find_first_not_of(' '), e = tok.find_last_not_of(' ');
    if (b == std::string::npos) continue;
    tok = tok.substr(b, e - b + 1);
    if (tok.empty() || tok.size() > 18 || tok.find_first_not_of("0123456789") != std::string::npos) return false;
    shape.push_back(std::stoll(tok));
  }
  return true;
}
}  // namespace

std::string file_safe(const std::string& name) {
  std::string r = name;
  for (char& c : r)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  return r;
}

HostTensor read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open");
  // The file's size bounds every length in it (a pipe has none: then reads fail as they come).
  std::streamoff file_size = std::numeric_limits<std::streamoff>::max() / 2;
  if (f.seekg(0, std::ios::end) && f.tellg() >= 0) file_size = f.tellg();
  f.clear();
  f.seekg(0);
  char magic[8];
  if (!f.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) throw Error(path + ": not a .npy file");
  uint32_t hlen = 0;
  unsigned char b[4] = {};
  if (magic[6] == 1) {
    f.read(reinterpret_cast<char*>(b), 2);
    hlen = b[0] | (b[1] << 8);
  } else {
    f.read(reinterpret_cast<char*>(b), 4);
    hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (uint32_t(b[3]) << 24);
  }
  // The length is checked against the file before anything is allocated for it.
  if (!f || std::streamoff(hlen) > file_size - f.tellg()) throw Error(path + ": truncated header");
  std::string h(hlen, '\0');
  if (!f.read(h.data(), hlen)) throw Error(path + ": truncated header");
  if (header_field(h, "fortran_order") == "True") throw Error(path + ": Fortran-order arrays are not supported");
  std::string descr = header_field(h, "descr");
  HostTensor t;
  bool found = false;
  for (const Descr& d : kDescrs)
    if (descr == d.code || (descr.size() == 3 && descr[0] == '=' && descr.substr(1) == std::string(d.code).substr(1)))
      t.dtype = d.dtype, found = true;
  if (!found) throw Error(path + ": unsupported dtype '" + descr.substr(0, 32) + "'");
  if (h.find("'shape'") == std::string::npos || !parse_shape(header_field(h, "shape"), t.shape))
    throw Error(path + ": malformed shape in .npy header");
  // The data size, without overflow, must fit in what the file holds after the header.
  int64_t nbytes = dtype_size(t.dtype);
  const int64_t left = file_size - f.tellg();
  if (std::find(t.shape.begin(), t.shape.end(), 0) != t.shape.end()) nbytes = 0;  // an empty tensor has no data
  for (int64_t d : t.shape) {
    if (nbytes != 0 && nbytes > left / d)
      throw Error(path + ": truncated data (the shape needs more bytes than the file has)");
    nbytes *= d;
  }
  if (nbytes > left) throw Error(path + ": truncated data (expected " + std::to_string(nbytes) + " bytes)");
  t.bytes.resize(size_t(nbytes));
  if (!f.read(reinterpret_cast<char*>(t.bytes.data()), std::streamsize(t.bytes.size())))
    throw Error(path + ": truncated data (expected " + std::to_string(t.bytes.size()) + " bytes)");
  return t;
}

void write_npy(const std::string& path, const HostTensor& t) {
  const char* code = nullptr;
  for (const Descr& d : kDescrs)
    if (d.dtype == t.dtype) code = d.code;
  if (!code) throw Error(path + ": cannot write dtype " + std::string(dtype_name(t.dtype)) + " to .npy");
  std::string shape;
  for (int64_t d : t.shape) shape += std::to_string(d) + ",";
  if (t.shape.size() > 1) shape.pop_back();
  std::string h = "{'descr': '" + std::string(code) + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  h.append(64 - (10 + h.size() + 1) % 64, ' ');
  h += '\n';
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) throw Error(path + ": cannot write");
    uint16_t len = uint16_t(h.size());
    f.write("\x93NUMPY\x01\x00", 8);
    f.put(char(len & 0xff)).put(char(len >> 8));
    f << h;
    f.write(reinterpret_cast<const char*>(t.bytes.data()), std::streamsize(t.bytes.size()));
    if (!f) throw Error(path + ": write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw Error(path + ": cannot rename into place");
}

}  // namespace tgc
