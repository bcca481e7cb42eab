// gtest glue for the reference backend (passes/kernel_eval.h): the problems it reports for a
// kernel's run become one failure that lists them.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "passes/kernel_eval.h"

namespace tgc::test {

inline ::testing::AssertionResult ran_cleanly(const std::vector<std::string>& problems) {
  if (problems.empty()) return ::testing::AssertionSuccess();
  ::testing::AssertionResult r = ::testing::AssertionFailure();
  for (const std::string& p : problems) r << "\n  " << p;
  return r;
}

}  // namespace tgc::test
