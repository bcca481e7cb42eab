// Memory planning: intermediates share one arena, packed by lifetime (first-fit, largest first).
#pragma once
#include <map>

#include "passes/schedule.h"

namespace tgc {

struct MemoryPlan {
  std::map<int64_t, int64_t> arena_offset;  // intermediate buffer id -> byte offset
  int64_t arena_bytes = 0;
  int64_t intermediate_bytes = 0;  // what the arena would need without sharing
};

// `alignment`: byte alignment of every offset (OpenCL sub-buffers need the device's base
// address alignment, up to 512 B on some GPUs).
MemoryPlan plan_memory(const Graph& g, const Schedule& s, int64_t alignment = 64);

}  // namespace tgc
