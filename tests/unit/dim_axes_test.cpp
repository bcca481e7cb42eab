// model/dim_axes: which graphs one sample's program can compute per sample. Each case builds
// the same graph at batch sizes 13 and 17 and asks where the batch lies in each output, or
// expects the error that names why samples would mix.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "ir/error.h"
#include "ir/tensor.h"
#include "model/dim_axes.h"
#include "ir/symbolic.h"

namespace tgc {
namespace {

using Build = std::function<std::vector<Tensor>(Graph&, int64_t n)>;

HostTensor ones(const Shape& s) {
  HostTensor h(DType::F32, s);
  for (int64_t i = 0; i < h.numel(); ++i) h.set(i, 1.0 + double(i % 7));
  return h;
}

std::vector<int> axes_of(const Build& build) {
  Graph ga, gb;
  std::vector<const UOp*> ra, rb;
  for (const Tensor& t : build(ga, 13)) ra.push_back(t.uop());
  for (const Tensor& t : build(gb, 17)) rb.push_back(t.uop());
  return batch_axes(ga, ra, 13, gb, rb, 17);
}

std::string error_of(const Build& build) {
  try {
    axes_of(build);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

Tensor input(Graph& g, const Shape& s) { return Tensor::input(g, "x", DType::F32, s); }

TEST(BatchAxis, MlpWithSoftmaxKeepsTheBatchFirst) {
  auto mlp = [](Graph& g, int64_t n) {
    Tensor w = Tensor::weight(g, "w", ones({8, 4}));
    return std::vector<Tensor>{input(g, {n, 8}).matmul(w).relu().softmax(-1)};
  };
  EXPECT_EQ(axes_of(mlp), std::vector<int>{0});
}

TEST(BatchAxis, FollowsPermutesAndSeesBatchFreeOutputs) {
  auto f = [](Graph& g, int64_t n) {
    Tensor w = Tensor::weight(g, "w", ones({3, 5}));
    return std::vector<Tensor>{input(g, {n, 3, 5}).permute({1, 0, 2}) * 2.0, w.exp()};
  };
  EXPECT_EQ(axes_of(f), (std::vector<int>{1, -1}));
}

TEST(BatchAxis, BatchMergedAsTheOutermostFactorIsSeparable) {
  // ONNX Softmax before opset 13 flattens [N, T, C] to [N*T, C].
  auto f = [](Graph& g, int64_t n) {
    return std::vector<Tensor>{input(g, {n, 4, 5}).reshape({n * 4, 5}).softmax(-1).reshape({n, 4, 5})};
  };
  EXPECT_EQ(axes_of(f), std::vector<int>{0});
}

TEST(BatchAxis, NamesWhatMixesSamples) {
  auto reduce = [](Graph& g, int64_t n) {
    Tensor x = input(g, {n, 4});
    Tensor m = x.max();  // over the batch too (melspectrogram's global ReduceMax)
    g.set_origin(m.uop(), "ReduceMax rm");
    return std::vector<Tensor>{x - m.reshape({1, 1}).expand({n, 4})};
  };
  EXPECT_NE(error_of(reduce).find("node 'ReduceMax rm' (REDUCE) reduces over the batch dim"), std::string::npos)
      << error_of(reduce);
  auto across = [](Graph& g, int64_t n) {  // the batch no longer the outer part of the merged dim
    return std::vector<Tensor>{input(g, {n, 4}).permute({1, 0}).reshape({4 * n}).reshape({4, n}).permute({1, 0})};
  };
  EXPECT_NE(error_of(across).find("reshapes across the batch dim"), std::string::npos) << error_of(across);
  auto slice = [](Graph& g, int64_t n) { return std::vector<Tensor>{input(g, {n, 4}).shrink({{1, n}, {0, 4}})}; };
  EXPECT_NE(error_of(slice).find("its dims follow the batch size"), std::string::npos) << error_of(slice);
  auto flip = [](Graph& g, int64_t n) { return std::vector<Tensor>{input(g, {n, 4}).flip({0})}; };
  EXPECT_NE(error_of(flip).find("reverses the batch dim"), std::string::npos) << error_of(flip);
}

TEST(BatchAxis, RejectsValuesComputedFromTheBatchSize) {
  auto scaled = [](Graph& g, int64_t n) { return std::vector<Tensor>{input(g, {n, 4}) * double(n)}; };
  EXPECT_NE(error_of(scaled).find("takes a value computed from the batch size"), std::string::npos) << error_of(scaled);
  auto positions = [](Graph& g, int64_t n) {  // Range(0, N): a different value per sample
    return std::vector<Tensor>{input(g, {n, 4}) + Tensor::arange(g, n, DType::F32).reshape({n, 1}).expand({n, 4})};
  };
  EXPECT_NE(error_of(positions).find("uses a constant computed from the batch size"), std::string::npos)
      << error_of(positions);
}

TEST(BatchAxis, RejectsMergedBatchOutputs) {
  auto f = [](Graph& g, int64_t n) { return std::vector<Tensor>{input(g, {n, 4, 5}).reshape({n * 4, 5})}; };
  EXPECT_NE(error_of(f).find("is an output with the batch merged into another dim"), std::string::npos) << error_of(f);
}

// var_extents of the roots of `build` traced at 16 and 15: per root the mask of the axes that
// follow the dim, and the number of REDUCE axes over it. `sizes` gets each root's run-time sizes
// along those axes at t = 1..16 (eval_index of the extents).
std::vector<uint64_t> var_masks(const Build& build, int* reduces_over_dim = nullptr,
                                std::vector<std::vector<int64_t>>* sizes = nullptr) {
  Graph ga, gb;
  std::vector<const UOp*> ra, rb;
  for (const Tensor& t : build(ga, 16)) ra.push_back(t.uop());
  for (const Tensor& t : build(gb, 15)) rb.push_back(t.uop());
  const UOp* var = ga.var("t", 1, 16);
  VarExtents ext = var_extents(ga, ra, var, gb, rb, 15);
  auto mask_of = [&](const UOp* u) {
    uint64_t m = 0;
    const auto& e = ext.extent.at(u);
    for (size_t i = 0; i < e.size(); ++i)
      if (e[i] && e[i] != ext.broadcast) m |= uint64_t(1) << i;
    return m;
  };
  std::vector<uint64_t> out;
  for (const UOp* r : ra) out.push_back(mask_of(r));
  if (reduces_over_dim) {
    *reduces_over_dim = 0;
    for (const auto& [u, e] : ext.extent)
      if (u->op == Op::Reduce)
        for (int64_t ax : u->reduce().axes) *reduces_over_dim += int(mask_of(u->src[0]) >> ax & 1);
  }
  if (sizes)
    for (const UOp* r : ra)
      for (const UOp* e : ext.extent.at(r)) {
        if (!e || e == ext.broadcast) continue;
        sizes->emplace_back();
        for (int64_t t = 1; t <= 16; ++t) sizes->back().push_back(eval_index(e, {{var, t}}));
      }
  return out;
}

std::string var_error(const Build& build) {
  try {
    var_masks(build);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(VarAxes, AttentionOverARunTimeLength) {
  auto attn = [](Graph& g, int64_t t) {
    Tensor x = input(g, {1, t, 8});
    Tensor pos = Tensor::weight(g, "pos", ones({32, 8})).shrink({{0, t}, {0, 8}});  // a position table cut to t
    Tensor h = x + pos.reshape({1, t, 8});
    Tensor a = h.matmul(h.transpose()).softmax(-1);  // [1, t, t]
    return std::vector<Tensor>{a.matmul(h), a};
  };
  int reduces = 0;
  EXPECT_EQ(var_masks(attn, &reduces), (std::vector<uint64_t>{0b010, 0b110}));
  EXPECT_GE(reduces, 3);  // softmax's max and sum and the second matmul run over the length
}

TEST(VarAxes, PadsAndWindowsGiveSizesOverTheDim) {
  // A convolution (pad 1, kernel 3, stride 2) and a max pool (kernel 2, stride 2, no pad) over t;
  // the sizes are those the Tensor API computes at each t.
  auto conv = [](Graph& g, int64_t t) {
    Tensor x = input(g, {1, 2, t});
    Tensor w = Tensor::weight(g, "w", ones({3, 2, 3}));
    Tensor y = x.conv(w, std::nullopt, {2}, {1, 1}, {1}, 1);
    return std::vector<Tensor>{y, y.max_pool({2}, {2}, {0, 0}, {1}, false), x.pad({{0, 0}, {0, 0}, {2, 3}})};
  };
  std::vector<std::vector<int64_t>> sizes;
  EXPECT_EQ(var_masks(conv, nullptr, &sizes), (std::vector<uint64_t>{0b100, 0b100, 0b100}));
  ASSERT_EQ(sizes.size(), 3u);
  for (int64_t t = 1; t <= 16; ++t) {
    int64_t c = (t + 2 - 3) / 2 + 1;
    EXPECT_EQ(sizes[0][size_t(t - 1)], c) << "conv at t=" << t;
    if (c >= 2) EXPECT_EQ(sizes[1][size_t(t - 1)], (c - 2) / 2 + 1) << "pool at t=" << t;
    EXPECT_EQ(sizes[2][size_t(t - 1)], t + 5) << "pad at t=" << t;
  }
}

TEST(VarAxes, AnUpsampleMergesTheDimAsTheOuterPart) {
  // [t, 1] -> [t, 2] -> [2t]: a nearest upsample; its run-time size is 2t, then a pad of 1.
  auto up = [](Graph& g, int64_t t) {
    return std::vector<Tensor>{
        input(g, {3, t}).reshape({3, t, 1}).expand({3, t, 2}).reshape({3, 2 * t}).pad({{0, 0}, {1, 0}})};
  };
  std::vector<std::vector<int64_t>> sizes;
  EXPECT_EQ(var_masks(up, nullptr, &sizes), (std::vector<uint64_t>{0b10}));
  ASSERT_EQ(sizes.size(), 1u);
  for (int64_t t = 1; t <= 16; ++t) EXPECT_EQ(sizes[0][size_t(t - 1)], 2 * t + 1) << "t=" << t;
}

TEST(VarAxes, AReflectPadSlicesAndPlacesItsTailAtRunTimeOffsets) {
  // reflect (2, 3) over t: the tail is x[t-4 : t-1] reversed, placed after 2 + t elements; a
  // stride-4 window after it counts 1 at t = 16 (a size 1 at the bound is fixed).
  Graph ga, gb;
  auto build = [](Graph& g, int64_t t) {
    Tensor p = input(g, {1, 1, t}).pad({{0, 0}, {0, 0}, {2, 3}}, Tensor::PadMode::Reflect);
    return std::vector<const UOp*>{p.uop(), p.max_pool({13}, {13}, {0, 0}, {1}, false).uop()};
  };
  std::vector<const UOp*> ra = build(ga, 16), rb = build(gb, 15);
  const UOp* var = ga.var("t", 1, 16);
  VarExtents ext = var_extents(ga, ra, var, gb, rb, 15);
  ASSERT_TRUE(ext.extent.at(ra[0])[2]);
  EXPECT_FALSE(ext.extent.at(ra[1])[2]);
  std::vector<std::pair<Op, int64_t>> offsets;  // at t = 10
  for (const auto& [node_axis, start] : ext.offset)
    offsets.push_back({node_axis.first->op, eval_index(start, {{var, 10}})});
  std::vector<std::pair<Op, int64_t>> want{{Op::Shrink, 6}, {Op::Pad, 12}};
  std::sort(offsets.begin(), offsets.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(offsets, want);
  for (int64_t t = 4; t <= 16; ++t) EXPECT_EQ(eval_index(ext.extent.at(ra[0])[2], {{var, t}}), t + 5) << "t=" << t;
}

TEST(VarAxes, TheLeastSizeIsWhereEveryWindowAndSliceFits) {
  // A window of 5 (no pad) needs t >= 5; a reflect pad of 3 also needs the data past 3 (t >= 4).
  auto least = [](std::function<Tensor(const Tensor&)> f) {
    Graph ga, gb;
    const UOp* ra = f(input(ga, {1, 1, 16})).uop();
    const UOp* rb = f(input(gb, {1, 1, 9})).uop();
    return var_extents(ga, {ra}, ga.var("t", 1, 16), gb, {rb}, 9).min_value;
  };
  EXPECT_EQ(least([](const Tensor& x) { return x.max_pool({5}, {1}, {0, 0}, {1}, false); }), 5);
  EXPECT_EQ(least([](const Tensor& x) { return x.pad({{0, 0}, {0, 0}, {3, 3}}, Tensor::PadMode::Reflect); }), 4);
  EXPECT_EQ(least([](const Tensor& x) { return x.exp(); }), 1);
}

TEST(VarAxes, AMeanScalesByTheRunTimeCount) {
  // mean over t of [t, 4] after a stride-2 pool: 1 / ((t - 2) / 2 + 1) at run time.
  Graph ga, gb;
  auto build = [](Graph& g, int64_t t) {
    return input(g, {1, 4, t}).max_pool({2}, {2}, {0, 0}, {1}, false).mean({2}).uop();
  };
  const UOp* ra = build(ga, 16);
  const UOp* rb = build(gb, 9);
  const UOp* var = ga.var("t", 1, 16);
  VarExtents ext = var_extents(ga, {ra}, var, gb, {rb}, 9);
  ASSERT_EQ(ext.reciprocal_of.size(), 1u);
  const UOp* count = ext.reciprocal_of.begin()->second;
  for (int64_t t = 2; t <= 16; ++t) EXPECT_EQ(eval_index(count, {{var, t}}), t / 2) << "t=" << t;
}

TEST(VarAxes, NamesWhatTheLayoutCannotFollow) {
  auto scaled = [](Graph& g, int64_t t) {
    return std::vector<Tensor>{input(g, {t, 4}) * double(t)};
  };  // not 1 / a count
  EXPECT_NE(var_error(scaled).find("takes a value computed from the dynamic dim's size"), std::string::npos)
      << var_error(scaled);
  auto flip = [](Graph& g, int64_t t) { return std::vector<Tensor>{input(g, {t, 4}).flip({0})}; };
  EXPECT_NE(var_error(flip).find("reverses the dynamic dim"), std::string::npos) << var_error(flip);
  // Merged into another axis (softmax's rows), the dim may be split out again but not reduced or output.
  auto round_trip = [](Graph& g, int64_t t) {
    return std::vector<Tensor>{input(g, {4, t}).reshape({4 * t}).exp().reshape({4, t})};
  };
  EXPECT_EQ(var_masks(round_trip), (std::vector<uint64_t>{0b10}));
  auto merged_sum = [](Graph& g, int64_t t) { return std::vector<Tensor>{input(g, {4, t}).reshape({4 * t}).sum({0})}; };
  EXPECT_NE(var_error(merged_sum).find("reduces, pads, slices or reverses an axis that merges the dynamic dim"),
            std::string::npos)
      << var_error(merged_sum);
  auto merged_out = [](Graph& g, int64_t t) { return std::vector<Tensor>{input(g, {4, t}).reshape({4 * t})}; };
  EXPECT_NE(var_error(merged_out).find("is an output with the dynamic dim merged"), std::string::npos)
      << var_error(merged_out);
  auto across = [](Graph& g, int64_t t) { return std::vector<Tensor>{input(g, {4, t}).reshape({t, 4})}; };
  EXPECT_NE(var_error(across).find("reshapes across the dynamic dim"), std::string::npos) << var_error(across);
  // A window whose count depends on the size other than through the view (ceil mode's extra pad).
  auto ceil_pool = [](Graph& g, int64_t t) {
    return std::vector<Tensor>{input(g, {1, 1, t}).max_pool({2}, {2}, {0, 0}, {1}, true)};
  };
  EXPECT_NE(var_error(ceil_pool).find("is built differently at sizes 16 and 15"), std::string::npos)
      << var_error(ceil_pool);
}

}  // namespace
}  // namespace tgc
