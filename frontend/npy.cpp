#include "frontend/npy.h"

#include <cstdio>
#include <cstring>
#include <fstream>
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

std::string header_field(const std::string& h, const std::string& key) {
  size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) return "";
  size_t colon = h.find(':', k);
  size_t start = h.find_first_not_of(' ', colon + 1);
  if (h[start] == '(') return h.substr(start + 1, h.find(')', start) - start - 1);
  if (h[start] == '\'') return h.substr(start + 1, h.find('\'', start + 1) - start - 1);
  return h.substr(start, h.find_first_of(",}", start) - start);
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
  std::string h(hlen, '\0');
  if (!f.read(h.data(), hlen)) throw Error(path + ": truncated header");
  if (header_field(h, "fortran_order") == "True") throw Error(path + ": Fortran-order arrays are not supported");
  std::string descr = header_field(h, "descr");
  HostTensor t;
  bool found = false;
  for (const Descr& d : kDescrs)
    if (descr == d.code || (descr.size() == 3 && descr[0] == '=' && descr.substr(1) == std::string(d.code).substr(1)))
      t.dtype = d.dtype, found = true;
  if (!found) throw Error(path + ": unsupported dtype '" + descr + "'");
  std::stringstream dims(header_field(h, "shape"));
  std::string tok;
  while (std::getline(dims, tok, ','))
    if (tok.find_first_not_of(' ') != std::string::npos) t.shape.push_back(std::stoll(tok));
  t.bytes.resize(size_t(numel(t.shape) * dtype_size(t.dtype)));
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
