// What tgc reads from tgc-agent (tune/agent_client.cpp): the greeting, its API lines and the
// timing replies. Lines of the input are fed as an agent would send them; each is parsed or
// refused with a tgc::Error (greeting) or false (reply).
#include <cmath>
#include <string>

#include "ir/error.h"
#include "tune/agent_client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string in(reinterpret_cast<const char*>(data), size);
  size_t pos = 0;
  auto next = [&](std::string& line) {
    if (pos > in.size()) return false;
    size_t nl = in.find('\n', pos);
    line = in.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? in.size() + 1 : nl + 1;
    return true;
  };
  std::string line;
  if (!next(line)) return 0;
  try {
    tgc::AgentGreeting g;
    int more = tgc::parse_agent_greeting(line, g);
    for (int row = 0; row < more && next(line); ++row) tgc::parse_agent_api_line(row, line, g);
  } catch (const tgc::Error&) {
  }
  while (next(line)) {
    tgc::AgentTiming t;
    if (tgc::parse_agent_reply(line, t) && t.iters < 0) abort();
  }
  return 0;
}
