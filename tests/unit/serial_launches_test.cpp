// Serial launches (passes/serial_launches.h): which kernels run one after another in one
// work-group, and the actions each stage takes there.
#include <gtest/gtest.h>

#include "passes/serial_launches.h"
#include "test_util.h"

namespace tgc {
namespace {

class SerialLaunchesTest : public ::testing::Test, protected test::Env {
 protected:
  // A squeeze-excite block as the qcom target schedules it: the means, two FC layers, a 1x1 conv.
  Schedule squeeze_excite(const TargetProfile& t, int64_t channels = 32) {
    Tensor x = input({1, channels, 6, 16});
    Tensor se =
        x.mean({2, 3}, true).conv(weight({8, channels, 1, 1}), weight({8}), {1, 1}, {0, 0, 0, 0}, {1, 1}, 1).relu();
    se = se.conv(weight({channels, 8, 1, 1}), weight({channels}), {1, 1}, {0, 0, 0, 0}, {1, 1}, 1).sigmoid();
    Tensor y = (x * se).conv(weight({16, channels, 1, 1}), std::nullopt, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1);
    return schedule(g, {y.uop()}, schedule_options(t));
  }
};

TEST_F(SerialLaunchesTest, ConsecutiveSmallKernelsShareALaunch) {
  TargetProfile qcom = opencl_profile();
  Schedule s = squeeze_excite(qcom);
  ASSERT_EQ(s.kernels.size(), 4u) << describe(g, s);
  std::vector<SerialLaunch> l = plan_serial_launches(s, qcom);
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].first, 0u);  // the means and both FC layers; the conv's 1536 outputs are not small
  EXPECT_EQ(l[0].count, 3u);
}

TEST_F(SerialLaunchesTest, NoneWithoutASerialGroupOrForLargeReads) {
  EXPECT_TRUE(plan_serial_launches(squeeze_excite(cuda_profile()), cuda_profile()).empty());
  // Means over 512 x 96 values read more than a work-group reads in a launch's time.
  TargetProfile qcom = opencl_profile();
  Schedule s = squeeze_excite(qcom, 512);
  std::vector<SerialLaunch> l = plan_serial_launches(s, qcom);
  ASSERT_EQ(l.size(), 1u) << describe(g, s);
  EXPECT_EQ(l[0].first, 1u);  // the FC layers only
  EXPECT_EQ(l[0].count, 2u);
}

// Each stage fills the group with its outputs' reduces (GROUP) and issues its loads several at a
// time (UNROLL); the actions apply to the stage as it is.
TEST_F(SerialLaunchesTest, StagesSplitTheirReducesOverTheGroup) {
  TargetProfile qcom = opencl_profile();
  Schedule s = squeeze_excite(qcom);
  std::vector<Opt> mean = serial_stage_opts(s.kernels[0], qcom), fc = serial_stage_opts(s.kernels[1], qcom);
  // 32 means over 6 x 16: 8 threads each, 2 x 6 loads at once; 8 outputs over 32 inputs: 32 threads each.
  EXPECT_EQ(opts_str(mean), "GROUP(2,8) UNROLL(2,2) UNROLL(1,6)");
  EXPECT_EQ(opts_str(fc), "GROUP(1,32)");
  for (size_t i = 0; i < 3; ++i)
    EXPECT_NO_THROW(apply_opts(g, s.kernels[i], serial_stage_opts(s.kernels[i], qcom), qcom));
}

}  // namespace
}  // namespace tgc
