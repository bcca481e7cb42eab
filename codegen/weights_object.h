// Weights into the artifact without holding them in memory: laid out 64-byte aligned in the
// order of the runtime's buffer table, then streamed from each weight's Bytes (owned or mapped)
// either to a raw file (--weights=external) or into a minimal ELF relocatable object holding one
// read-only section and one hidden symbol, which the linker places in the artifact. LLVM IR
// constants and the assembler's .incbin would each hold another copy of every weight.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/uop.h"

namespace tgc {

struct WeightLayout {
  std::vector<int64_t> ids;           // weight buffers, in layout order
  std::map<int64_t, int64_t> offset;  // buffer id -> byte offset
  int64_t bytes = 0;
};

// The weights among `buffers` (others are skipped), in that order.
WeightLayout layout_weights(const Graph& g, const std::vector<int64_t>& buffers);

// The raw weight blob, as the runtime maps it.
void write_weights_file(const Graph& g, const WeightLayout& w, const std::string& path);

// An ELF64 relocatable object for `arch` (x86_64 or aarch64) defining the hidden symbol `symbol`
// at the blob's first byte.
void write_weights_object(const Graph& g, const WeightLayout& w, const std::string& arch, const std::string& symbol,
                          const std::string& path);

}  // namespace tgc
