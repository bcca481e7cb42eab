// Sequence values: a sequence is a list of tensors whose length is known at compile time
// (OpContext::Sequence), built and taken apart while importing. Positions (SequenceAt,
// SequenceInsert, SequenceErase) must be compile-time constants, and so must SplitToSequence's
// split sizes; a sequence whose length depends on data is an error naming the node. Graph inputs
// and outputs are tensors: a sequence never leaves the graph.
#include "frontend/onnx/onnx_ops.h"

namespace tgc {
namespace {

// A position input (a scalar) in [-n, n - 1], or [-n, n] where `end_ok` (an insert's position may
// be the length), as an index from the front.
int64_t position(Ctx& c, size_t i, int64_t n, bool end_ok) {
  std::vector<int64_t> p = c.ints(i);
  if (p.size() != 1) c.fail("position (input " + std::to_string(i) + ") must be a scalar");
  int64_t k = p[0] < 0 ? p[0] + n : p[0];
  if (k < 0 || k > n - (end_ok ? 0 : 1))
    c.fail("position " + std::to_string(p[0]) + " is out of range for a sequence of " + std::to_string(n) + " tensors");
  return k;
}

// A tensor joining a sequence must have the dtype of those already in it.
void check_dtype(Ctx& c, const Ctx::Sequence& s, const Tensor& t) {
  if (!s.empty() && s[0].dtype() != t.dtype())
    c.fail("a " + std::string(dtype_name(t.dtype())) + " tensor cannot join a sequence of " +
           std::string(dtype_name(s[0].dtype())) + " tensors");
}

Outs sequence(Ctx& c, Ctx::Sequence s) {
  c.sequence_outputs[0] = std::move(s);
  return {};
}

Outs split_to_sequence(Ctx& c) {
  const Tensor& x = c.in(0);
  int64_t axis = x.norm_axis(c.attr_int("axis", 0));
  int64_t len = x.shape()[size_t(axis)];
  std::vector<int64_t> sizes;
  if (c.has(1)) {
    HostTensor split = c.constant(1);
    std::vector<int64_t> v = split.to_ints();
    if (split.shape.empty()) {  // a scalar: pieces of that size, the last one shorter
      if (v.at(0) <= 0) c.fail("split " + std::to_string(v[0]) + " must be positive");
      for (int64_t at = 0; at < len; at += v[0]) sizes.push_back(std::min(v[0], len - at));
    } else {
      if (split.shape.size() != 1) c.fail("split must be a scalar or 1-D, got " + shape_str(split.shape));
      int64_t sum = 0;
      for (int64_t n : v) {
        if (n < 0) c.fail("split sizes must not be negative, got " + std::to_string(n));
        sum += n;
      }
      if (sum != len)
        c.fail("split sizes sum to " + std::to_string(sum) + ", but axis " + std::to_string(axis) + " has " +
               std::to_string(len));
      sizes = v;
    }
  } else {
    sizes.assign(size_t(len), 1);
  }
  Ctx::Sequence s = x.split(sizes, axis);
  // Without split, keepdims=0 drops the axis (each piece has size 1 there).
  if (!c.has(1) && c.attr_int("keepdims", 1) == 0)
    for (Tensor& piece : s) piece = piece.squeeze({axis});
  return sequence(c, std::move(s));
}

Outs concat_from_sequence(Ctx& c) {
  const Ctx::Sequence& s = c.seq_in(0);
  if (!c.has_attr("axis")) c.fail("attribute 'axis' is required");
  if (s.empty()) c.fail("the sequence is empty (nothing to concatenate)");
  int64_t axis = c.attr_int("axis", 0);
  if (c.attr_int("new_axis", 0) == 0) return {Tensor::cat(s, axis)};
  // new_axis=1: the tensors stacked along a new axis, in [-rank - 1, rank].
  int64_t rank = s[0].ndim();
  if (axis < -rank - 1 || axis > rank)
    c.fail("axis " + std::to_string(axis) + " is out of range for stacking tensors of rank " + std::to_string(rank));
  if (axis < 0) axis += rank + 1;
  std::vector<Tensor> parts;
  for (const Tensor& t : s) parts.push_back(t.unsqueeze({axis}));
  return {Tensor::cat(parts, axis)};
}

}  // namespace

void add_sequence_ops(OpTable& t) {
  t["SequenceEmpty"] = [](Ctx& c) -> Outs {
    dtype_from_onnx(int(c.attr_int("dtype", 1)));  // a type tgc has
    return sequence(c, {});
  };
  t["SequenceConstruct"] = [](Ctx& c) -> Outs {
    Ctx::Sequence s;
    for (size_t i = 0; i < c.num_inputs(); ++i) {
      check_dtype(c, s, c.in(i));
      s.push_back(c.in(i));
    }
    if (s.empty()) c.fail("SequenceConstruct needs at least one input");
    return sequence(c, std::move(s));
  };
  t["SequenceAt"] = [](Ctx& c) -> Outs {
    const Ctx::Sequence& s = c.seq_in(0);
    return {s[size_t(position(c, 1, int64_t(s.size()), false))]};
  };
  t["SequenceInsert"] = [](Ctx& c) -> Outs {
    Ctx::Sequence s = c.seq_in(0);
    const Tensor& x = c.in(1);
    check_dtype(c, s, x);
    int64_t at = c.has(2) ? position(c, 2, int64_t(s.size()), true) : int64_t(s.size());
    s.insert(s.begin() + at, x);
    return sequence(c, std::move(s));
  };
  t["SequenceErase"] = [](Ctx& c) -> Outs {
    Ctx::Sequence s = c.seq_in(0);
    if (s.empty()) c.fail("erasing from an empty sequence");
    int64_t at = c.has(1) ? position(c, 1, int64_t(s.size()), false) : int64_t(s.size()) - 1;
    s.erase(s.begin() + at);
    return sequence(c, std::move(s));
  };
  t["SequenceLength"] = [](Ctx& c) -> Outs { return {Tensor::full(c.g, {}, double(c.seq_in(0).size()), DType::I64)}; };
  t["SplitToSequence"] = split_to_sequence;
  t["ConcatFromSequence"] = concat_from_sequence;
  // Identity (here, as it passes a sequence through as well as a tensor: opset 14 and later).
  t["Identity"] = [](Ctx& c) -> Outs {
    if (c.is_sequence(0)) return sequence(c, c.seq_in(0));
    return {c.in(0)};
  };
}

}  // namespace tgc
