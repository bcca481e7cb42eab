// The one exception type of the compiler. Messages carry their context (file, node, op).
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>

namespace tgc {

// `s` with every byte that a terminal or a log line would not show as text escaped: control
// characters as \n, \r, \t or \xNN (C1 controls and DEL too), and bytes that are not part of valid
// UTF-8 as \xNN. Valid UTF-8 text (names in any script) is kept. Backslashes are kept, so escaping
// twice changes nothing.
std::string printable(std::string_view s);

// Every message goes through printable(): names read from model files (inputs, nodes,
// initializers, metadata keys) reach messages unchecked, and an error stays one line whatever they hold.
struct Error : std::runtime_error {
  explicit Error(const std::string& msg) : std::runtime_error(printable(msg)) {}
  explicit Error(const char* msg) : Error(std::string(msg)) {}
};

// Throws tgc::Error with `msg` when `cond` is false. For user-facing checks, not internal asserts.
inline void check(bool cond, const std::string& msg) {
  if (!cond) throw Error(msg);
}

}  // namespace tgc
