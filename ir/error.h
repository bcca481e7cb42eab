// The one exception type of the compiler. Messages carry their context (file, node, op).
#pragma once
#include <stdexcept>
#include <string>

namespace tgc {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws tgc::Error with `msg` when `cond` is false. For user-facing checks, not internal asserts.
inline void check(bool cond, const std::string& msg) {
  if (!cond) throw Error(msg);
}

}  // namespace tgc
