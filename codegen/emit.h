// The emitter: one object file for the target triple holding a compiled model's description
// (runtime-stub/include/tgc_model.h: buffers, launches, I/O, run-time dims), its entry points (main() for
// executables, NAME_* for shared libraries) and its weights (codegen/weights_object.h), streamed,
// never held as one blob.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "target/targets.h"
#include "model/model.h"
#include "passes/memplan.h"
#include "passes/schedule.h"

namespace tgc {

// One launch of the model: a kernel and the buffers it gets, in argument order.
struct KernelLaunch {
  std::string name;
  std::string cpu_symbol;     // CPU: the kernel function (codegen/cpu_objects.h)
  std::string blob;           // GPU: the kernel's code (codegen/dialect.h)
  std::string fallback_blob;  // GPU: "", or its code for devices without an optional feature blob needs
  std::vector<int64_t> args;  // buffer ids
  std::array<int64_t, 3> global{1, 1, 1}, local{0, 0, 0};
  int32_t outer_var = -1;                 // the VAR slot the outermost work-item dim is, or -1
  int32_t outer_step = 1;                 // that dim is ceil(VAR / outer_step) (a tiled run-time axis)
  int32_t runs_var = 0;                   // a variant: runs for values of this VAR slot in
  int64_t runs_from = 0, runs_until = 0;  // [runs_from, runs_until] (0: unbounded)
  int32_t runs_if_var = -1;               // a kernel of one side of an If: runs when this VAR slot
  int64_t runs_if_value = 0;              // (its condition) has this value
  int32_t sets_var = -1;                  // the VAR slot whose value (ModelObject::var_source) it stores
};

struct ModelObject {
  const Model& model;
  const Schedule& schedule;
  const MemoryPlan& plan;
  const ResolvedTarget& target;
  std::vector<KernelLaunch> launches;
  std::string name;                 // C identifier: NAME_create, ...
  bool shared = false;              // NAME_* entry points instead of main()
  std::string weights_file;         // external weights: the file name the runtime looks for; "" embeds them
  std::vector<int64_t> var_source;  // per VAR slot: -1, or the buffer where a kernel stores its value
};

// Writes the object to `object_path` and the weights to `weights_path`: the raw weights file for
// external weights, else an object defining tgc_weights_NAME to link beside it. Returns the
// weight bytes.
int64_t emit_model_object(const ModelObject& mo, const std::string& object_path, const std::string& weights_path);

}  // namespace tgc
