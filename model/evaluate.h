// A model's outputs computed by the reference interpreter (ir/interpret.h), at the sizes a run
// gives them: outputs along a size the model computes from data (NonZero's count) are cut to it.
#pragma once
#include <map>
#include <vector>

#include "model/model.h"

namespace tgc {

// `feeds` maps input buffer ids to their data (the VARs' values too, as the vars buffer, where
// the model has run-time dims).
std::vector<HostTensor> evaluate(const Model& m, const std::map<int64_t, HostTensor>& feeds);

}  // namespace tgc
