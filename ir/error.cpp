#include "ir/error.h"

#include <cstdint>

namespace tgc {

namespace {
// The length of the valid UTF-8 sequence at s[i] (1 to 4), or 0 where the bytes there are not
// one: a stray continuation byte, a truncated sequence, an overlong form, a surrogate, or a code
// point past U+10FFFF.
size_t utf8_length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return k < s.size() ? uint8_t(s[k]) : uint8_t(0); };
  uint8_t b = byte(i);
  auto cont = [&](size_t k) { return (byte(k) & 0xC0) == 0x80; };
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (b >= 0xE0 && b <= 0xEF) {
    uint8_t b1 = byte(i + 1);
    if ((b == 0xE0 && b1 < 0xA0) || (b == 0xED && b1 >= 0xA0)) return 0;  // overlong, surrogate
    return cont(i + 1) && cont(i + 2) ? 3 : 0;
  }
  if (b >= 0xF0 && b <= 0xF4) {
    uint8_t b1 = byte(i + 1);
    if ((b == 0xF0 && b1 < 0x90) || (b == 0xF4 && b1 >= 0x90)) return 0;  // overlong, past U+10FFFF
    return cont(i + 1) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  }
  return 0;
}
}  // namespace

std::string printable(std::string_view s) {
  static const char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  auto escape = [&](uint8_t b) {
    out += "\\x";
    out += hex[b >> 4];
    out += hex[b & 15];
  };
  for (size_t i = 0; i < s.size();) {
    uint8_t b = uint8_t(s[i]);
    size_t n = utf8_length(s, i);
    if (b == '\n') {
      out += "\\n";
    } else if (b == '\r') {
      out += "\\r";
    } else if (b == '\t') {
      out += "\\t";
    } else if (n == 0 || b < 0x20 || b == 0x7F || (b == 0xC2 && uint8_t(s[i + 1]) < 0xA0)) {
      // not UTF-8, a C0 control or DEL, or a C1 control (U+0080-U+009F): each byte as \xNN
      for (size_t k = 0; k < (n ? n : 1); ++k) escape(uint8_t(s[i + k]));
      i += n ? n : 1;
      continue;
    } else {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    ++i;
  }
  return out;
}

}  // namespace tgc
