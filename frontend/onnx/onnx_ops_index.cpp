// Indexing ops: element and N-d gathers/scatters, CumSum, OneHot, Trilu, Einsum and the
// ops whose output shape is fixed once their inputs are compile-time constants.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "frontend/onnx/onnx_ops.h"

namespace tgc {

namespace {
Tensor::Reduction reduction(Ctx& c) {
  std::string r = c.attr_string("reduction", "none");
  if (r == "none") return Tensor::Reduction::None;
  if (r == "add") return Tensor::Reduction::Add;
  if (r == "mul") return Tensor::Reduction::Mul;
  if (r == "max") return Tensor::Reduction::Max;
  if (r == "min") return Tensor::Reduction::Min;
  c.fail("unknown reduction '" + r + "'");
}

Tensor cumsum(Ctx& c) {
  const Tensor& x = c.in(0);
  bool exclusive = c.attr_int("exclusive", 0) != 0, reverse = c.attr_int("reverse", 0) != 0;
  if (c.in(1).numel() != 1) c.fail("axis must hold one value, got shape " + shape_str(c.in(1).shape()));
  if (c.is_constant(1)) return x.cumsum(c.ints(1)[0], exclusive, reverse);
  // The axis is known only at run time; the output shape does not depend on it, so compute the
  // sum along every axis and pick the one the axis names (a or a - rank). An axis out of range
  // (invalid per ONNX) cannot be reported at run time and gives axis 0's sums.
  if (x.ndim() == 0) c.fail("input must have rank >= 1");
  Tensor axis = c.in(1).reshape({}).cast(DType::I64);
  Tensor y = x.cumsum(0, exclusive, reverse);
  for (int64_t a = 1; a < x.ndim(); ++a) {
    Tensor named = axis.eq(axis.scalar(double(a))).logical_or(axis.eq(axis.scalar(double(a - x.ndim()))));
    y = Tensor::where(named, x.cumsum(a, exclusive, reverse), y);
  }
  return y;
}

Tensor one_hot(Ctx& c) {
  std::vector<double> depth = c.floats(1);
  if (depth.size() != 1) c.fail("depth must hold one value");
  const Tensor& values = c.in(2);
  if (values.numel() != 2) c.fail("values must hold [off, on]");
  Tensor off = values.slice({0}, {1}, {0}, {1}), on = values.slice({1}, {2}, {0}, {1});
  return Tensor::one_hot(c.in(0), int64_t(depth[0]), c.attr_int("axis", -1), off, on);
}

Tensor trilu(Ctx& c) {
  const Tensor& x = c.in(0);
  bool upper = c.attr_int("upper", 1) != 0;
  if (!c.has(1)) return x.trilu(0, upper);
  if (c.is_constant(1)) return x.trilu(c.ints(1).at(0), upper);
  // k known only at run time: compare each position's diagonal offset j - i with it.
  if (x.ndim() < 2) c.fail("input must have at least 2 dims, got " + shape_str(x.shape()));
  int64_t rows = x.dim(-2), cols = x.dim(-1);
  Tensor offset = Tensor::arange(c.g, cols).reshape({1, cols}) - Tensor::arange(c.g, rows).reshape({rows, 1});
  Tensor k = c.in(1).cast(DType::I64).reshape({});
  Tensor keep = upper ? offset.ge(k) : offset.le(k);
  return Tensor::where(keep, x, x.full_like(0));
}

// Einsum: each operand is permuted and broadcast into [output labels..., summed labels...],
// the operands are multiplied, and the summed labels are reduced. A label repeated within one
// operand takes that operand's diagonal first.
Tensor einsum(Ctx& c) {
  std::string eq;
  for (char ch : c.attr_string("equation", ""))
    if (ch != ' ') eq += ch;
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != c.num_inputs())
    c.fail("equation '" + eq + "' has " + std::to_string(terms.size()) + " operands, node has " +
           std::to_string(c.num_inputs()));
  // Labels are ints: letters as themselves, ellipsis dims as 1000 + position (right-aligned).
  constexpr int kEllipsis = 1000;
  int64_t ell = 0;
  std::vector<std::vector<int>> labels(terms.size());
  auto parse = [&](const std::string& term, int64_t rank) {
    size_t dots = term.find("...");
    int64_t letters = int64_t(term.size()) - (dots == std::string::npos ? 0 : 3);
    int64_t e = dots == std::string::npos ? 0 : rank - letters;
    if (e < 0 || (dots == std::string::npos && letters != rank))
      c.fail("term '" + term + "' does not match an operand of rank " + std::to_string(rank));
    return std::make_pair(dots, e);
  };
  std::vector<std::pair<size_t, int64_t>> dots(terms.size());
  for (size_t i = 0; i < terms.size(); ++i) {
    dots[i] = parse(terms[i], c.in(i).ndim());
    ell = std::max(ell, dots[i].second);
  }
  auto expand_term = [&](const std::string& term, size_t dot, int64_t e) {
    std::vector<int> r;
    for (size_t j = 0; j < term.size();) {
      if (j == dot) {
        for (int64_t k = 0; k < e; ++k) r.push_back(int(kEllipsis + ell - e + k));
        j += 3;
      } else {
        if (!std::isalpha(static_cast<unsigned char>(term[j])))
          c.fail("bad label '" + std::string(1, term[j]) + "' in '" + eq + "'");
        r.push_back(term[j++]);
      }
    }
    return r;
  };
  std::map<int, int> count;
  for (size_t i = 0; i < terms.size(); ++i) {
    labels[i] = expand_term(terms[i], dots[i].first, dots[i].second);
    for (int l : labels[i]) count[l]++;
  }
  std::vector<int> out;
  if (arrow != std::string::npos) {
    std::string rhs = eq.substr(arrow + 2);
    size_t dot = rhs.find("...");
    out = expand_term(rhs, dot, dot == std::string::npos ? 0 : ell);
  } else {
    for (int64_t k = 0; k < ell; ++k) out.push_back(int(kEllipsis + k));
    for (auto [l, n] : count)
      if (l < kEllipsis && n == 1) out.push_back(l);
  }
  std::vector<int> order = out;
  for (auto [l, n] : count)
    if (std::find(out.begin(), out.end(), l) == out.end()) order.push_back(l);
  std::optional<Tensor> prod;
  for (size_t i = 0; i < terms.size(); ++i) {
    Tensor t = c.in(i);
    std::vector<int> ls = labels[i];
    // Diagonals of repeated labels: keep where the two indices agree, sum the second away.
    for (size_t a = 0; a < ls.size(); ++a)
      for (size_t b = a + 1; b < ls.size();) {
        if (ls[a] != ls[b]) {
          ++b;
          continue;
        }
        int64_t n = t.dim(int64_t(a));
        Shape sa(size_t(t.ndim()), 1), sb(size_t(t.ndim()), 1);
        sa[a] = n, sb[b] = n;
        Tensor same = Tensor::arange(c.g, n).reshape(sa).eq(Tensor::arange(c.g, n).reshape(sb));
        t = Tensor::where(same, t, t.full_like(0)).sum({int64_t(b)});
        ls.erase(ls.begin() + long(b));
      }
    std::vector<int64_t> perm;
    Shape s;
    for (int l : order) {
      auto it = std::find(ls.begin(), ls.end(), l);
      if (it == ls.end()) {
        s.push_back(1);
      } else {
        perm.push_back(it - ls.begin());
        s.push_back(t.dim(it - ls.begin()));
      }
    }
    t = t.permute(perm).reshape(s);
    prod = prod ? *prod * t : t;
  }
  std::vector<int64_t> summed;
  for (size_t i = out.size(); i < order.size(); ++i) summed.push_back(int64_t(i));
  Tensor r = *prod;
  if (!summed.empty()) r = r.sum(summed);
  return r;
}

Tensor range(Ctx& c) {
  double start = c.floats(0).at(0), limit = c.floats(1).at(0), delta = c.floats(2).at(0);
  if (delta == 0) c.fail("delta is 0");
  int64_t n = std::max<int64_t>(0, int64_t(std::ceil((limit - start) / delta)));
  HostTensor h(c.in(0).dtype(), {n});
  for (int64_t i = 0; i < n; ++i) h.set(i, start + double(i) * delta);
  return Tensor::weight(c.g, c.node.output(0), std::move(h));
}

Tensor eye_like(Ctx& c) {
  const Tensor& x = c.in(0);
  if (x.ndim() != 2) c.fail("input must be 2-D, got " + shape_str(x.shape()));
  DType t = c.has_attr("dtype") ? dtype_from_onnx(int(c.attr_int("dtype", 1))) : x.dtype();
  int64_t k = c.attr_int("k", 0), rows = x.dim(0), cols = x.dim(1);
  HostTensor h(t, {rows, cols});
  for (int64_t i = 0; i < rows; ++i)
    if (i + k >= 0 && i + k < cols) h.set(i * cols + i + k, 1);
  return Tensor::weight(c.g, c.node.output(0), std::move(h));
}

// Ops whose output shape depends on values: supported when those values are compile-time constants.
Tensor reverse_sequence(Ctx& c) {
  const Tensor& x = c.in(0);
  int64_t ba = x.norm_axis(c.attr_int("batch_axis", 1)), ta = x.norm_axis(c.attr_int("time_axis", 0));
  int64_t B = x.dim(ba), T = x.dim(ta);
  Shape ls(size_t(x.ndim()), 1), ts(size_t(x.ndim()), 1);
  ls[size_t(ba)] = B, ts[size_t(ta)] = T;
  Tensor len = c.in(1).cast(DType::I64).reshape(ls), t = Tensor::arange(c.g, T).reshape(ts);
  // Within its length each sequence is read backwards; the rest stays in place.
  Tensor src = Tensor::where(t.lt(len), len - 1.0 - t, t).expand(x.shape());
  return x.gather_elements(src, ta);
}

Tensor scatter_nd(Ctx& c) { return c.in(0).scatter_nd(c.in(1), c.in(2), reduction(c)); }
}  // namespace

void add_index_ops(OpTable& t) {
  t["GatherElements"] = [](Ctx& c) -> Outs { return {c.in(0).gather_elements(c.in(1), c.attr_int("axis", 0))}; };
  t["GatherND"] = [](Ctx& c) -> Outs { return {c.in(0).gather_nd(c.in(1), c.attr_int("batch_dims", 0))}; };
  t["ScatterElements"] = [](Ctx& c) -> Outs {
    return {c.in(0).scatter_elements(c.in(1), c.in(2), c.attr_int("axis", 0), reduction(c))};
  };
  t["Scatter"] = [](Ctx& c) -> Outs {  // deprecated spelling of ScatterElements
    return {c.in(0).scatter_elements(c.in(1), c.in(2), c.attr_int("axis", 0), Tensor::Reduction::None)};
  };
  t["ScatterND"] = [](Ctx& c) -> Outs { return {scatter_nd(c)}; };
  t["CumSum"] = [](Ctx& c) -> Outs { return {cumsum(c)}; };
  t["OneHot"] = [](Ctx& c) -> Outs { return {one_hot(c)}; };
  t["Trilu"] = [](Ctx& c) -> Outs { return {trilu(c)}; };
  t["Einsum"] = [](Ctx& c) -> Outs { return {einsum(c)}; };
  t["Range"] = [](Ctx& c) -> Outs { return {range(c)}; };
  t["EyeLike"] = [](Ctx& c) -> Outs { return {eye_like(c)}; };
  t["ReverseSequence"] = [](Ctx& c) -> Outs { return {reverse_sequence(c)}; };
}

}  // namespace tgc
