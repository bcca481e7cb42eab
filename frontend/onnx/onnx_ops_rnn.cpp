// Recurrent layers (LSTM, GRU, RNN), unrolled over the sequence length, which is static. The input
// projection of every step is one matmul; each step adds its recurrent matmul and gate math.
#include <algorithm>
#include <cctype>

#include "frontend/onnx/onnx_ops.h"

namespace tgc {

namespace {
struct Activation {
  std::string name;  // lower case
  double alpha = 0, beta = 0;
};

Tensor activate(Ctx& c, const Activation& a, const Tensor& x) {
  const std::string& n = a.name;
  if (n == "sigmoid") return x.sigmoid();
  if (n == "tanh") return x.tanh();
  if (n == "relu") return x.relu();
  if (n == "affine") return x * a.alpha + a.beta;
  if (n == "leakyrelu") return x.leaky_relu(a.alpha);
  if (n == "thresholdedrelu") return Tensor::where(x.gt(x.scalar(a.alpha)), x, x.full_like(0));
  if (n == "scaledtanh") return (x * a.beta).tanh() * a.alpha;
  if (n == "hardsigmoid") return (x * a.alpha + a.beta).clip(0.0, 1.0);
  if (n == "elu") return Tensor::where(x.lt(x.scalar(0)), (x.exp() - 1.0) * a.alpha, x);
  if (n == "softsign") return x / (x.abs() + 1.0);
  if (n == "softplus") return (x.exp() + 1.0).log();
  c.fail("unknown activation '" + a.name + "'");
}

// The node's activations for `dirs` directions of `per_dir` functions each, with ONNX's defaults
// and alpha/beta values handed out in order to the functions that take them.
std::vector<Activation> activations(Ctx& c, std::vector<std::string> defaults, int64_t dirs) {
  size_t per_dir = defaults.size();
  std::vector<std::string> names = c.attr_strings("activations");
  if (names.empty())
    for (int64_t d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() != per_dir * size_t(dirs))
    c.fail("activations lists " + std::to_string(names.size()) + " functions, expected " +
           std::to_string(per_dir * size_t(dirs)));
  std::vector<double> alphas = c.attr_floats("activation_alpha"), betas = c.attr_floats("activation_beta");
  size_t ia = 0, ib = 0;
  std::vector<Activation> r;
  for (std::string n : names) {
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
    Activation a{n};
    // Defaults as in the ONNX operator docs.
    if (n == "leakyrelu")
      a.alpha = 0.01;
    else if (n == "thresholdedrelu" || n == "elu")
      a.alpha = 1.0;
    else if (n == "scaledtanh")
      a.alpha = 1.0, a.beta = 1.0;
    else if (n == "hardsigmoid")
      a.alpha = 0.2, a.beta = 0.5;
    else if (n == "affine")
      a.alpha = 1.0;
    bool takes_alpha = n == "leakyrelu" || n == "thresholdedrelu" || n == "elu" || n == "scaledtanh" ||
                       n == "hardsigmoid" || n == "affine";
    bool takes_beta = n == "scaledtanh" || n == "hardsigmoid" || n == "affine";
    if (takes_alpha && ia < alphas.size()) a.alpha = alphas[ia++];
    if (takes_beta && ib < betas.size()) a.beta = betas[ib++];
    r.push_back(a);
  }
  return r;
}

// What every recurrent op shares: shapes, weights and the step loop with sequence-length masks.
struct Recurrence {
  int64_t seq = 0, batch = 0, hidden = 0, dirs = 1, gates = 1;
  bool layout_batch_first = false;
  std::vector<bool> reverse;    // per direction
  Tensor x;                     // [seq, batch, input]
  std::optional<Tensor> valid;  // [seq, batch, 1] bool: step t is inside sequence b
  std::optional<double> clip;

  Recurrence(Ctx& c, int64_t n_gates) : gates(n_gates) {
    hidden = c.attr_int("hidden_size", 0);
    if (hidden <= 0) c.fail("missing hidden_size");
    layout_batch_first = c.attr_int("layout", 0) != 0;
    x = c.in(0);
    if (x.ndim() != 3) c.fail("X has shape " + shape_str(x.shape()) + ", expected rank 3");
    if (layout_batch_first) x = x.permute({1, 0, 2});
    seq = x.dim(0), batch = x.dim(1);
    std::string direction = c.attr_string("direction", "forward");
    if (direction == "forward")
      reverse = {false};
    else if (direction == "reverse")
      reverse = {true};
    else if (direction == "bidirectional")
      reverse = {false, true};
    else
      c.fail("unknown direction '" + direction + "'");
    dirs = int64_t(reverse.size());
    if (c.has_attr("clip")) clip = c.attr_float("clip", 0);
    if (c.has(4)) {
      const Tensor& lens = c.in(4);
      bool all_full = false;
      if (c.is_constant(4)) {
        std::vector<int64_t> l = c.ints(4);
        all_full = std::all_of(l.begin(), l.end(), [&](int64_t v) { return v == seq; });
      }
      if (!all_full) {
        if (dirs > 1 || reverse[0])
          c.fail("sequence_lens shorter than the sequence are supported for the forward direction only");
        Tensor t = Tensor::arange(c.g, seq).reshape({seq, 1, 1});
        valid = t.lt(lens.cast(DType::I64).reshape({1, batch, 1}));
      }
    }
  }

  Tensor weight(Ctx& c, size_t input, int64_t d, int64_t rows, int64_t cols) const {
    const Tensor& w = c.in(input);
    if (w.shape() != Shape{dirs, rows, cols})
      c.fail("input " + std::to_string(input) + " has shape " + shape_str(w.shape()) + ", expected " +
             shape_str({dirs, rows, cols}));
    return w.slice({d}, {d + 1}, {0}, {1}).reshape({rows, cols});
  }
  // Initial state input `input` for direction d as [batch, hidden] (zeros when absent).
  Tensor initial(Ctx& c, size_t input, int64_t d) const {
    if (!c.has(input)) return Tensor::full(c.g, {batch, hidden}, 0, x.dtype());
    Tensor h = c.in(input);
    if (layout_batch_first) h = h.permute({1, 0, 2});
    if (h.shape() != Shape{dirs, batch, hidden})
      c.fail("initial state has shape " + shape_str(c.in(input).shape()) + ", expected " +
             shape_str({dirs, batch, hidden}) + " (layout 0)");
    return h.slice({d}, {d + 1}, {0}, {1}).reshape({batch, hidden});
  }
  Tensor clipped(const Tensor& t) const { return clip ? t.clip(-*clip, *clip) : t; }
  // Keeps the old state where step t lies past a sequence's end.
  Tensor hold(int64_t t, const Tensor& next, const Tensor& prev) const {
    if (!valid) return next;
    return Tensor::where(valid->slice({t}, {t + 1}, {0}, {1}).reshape({batch, 1}), next, prev);
  }
  // Per-step outputs (in time order) to Y: [seq, dirs, batch, hidden] or, batch first, [batch, seq, dirs, hidden].
  Tensor stack(const std::vector<std::vector<Tensor>>& per_dir) const {
    std::vector<Tensor> dir_ys;
    for (const auto& steps : per_dir) {
      std::vector<Tensor> ys;
      for (int64_t t = 0; t < seq; ++t) {
        Tensor h = steps[size_t(t)];
        if (valid) h = Tensor::where(valid->slice({t}, {t + 1}, {0}, {1}).reshape({batch, 1}), h, h.full_like(0));
        ys.push_back(h.reshape({1, 1, batch, hidden}));
      }
      dir_ys.push_back(Tensor::cat(ys, 0));
    }
    Tensor y = Tensor::cat(dir_ys, 1);
    return layout_batch_first ? y.permute({2, 0, 1, 3}) : y;
  }
  Tensor final_state(const std::vector<Tensor>& per_dir) const {
    std::vector<Tensor> hs;
    for (const Tensor& h : per_dir) hs.push_back(h.reshape({1, batch, hidden}));
    Tensor r = Tensor::cat(hs, 0);
    return layout_batch_first ? r.permute({1, 0, 2}) : r;
  }
  // X @ W^T + biases for every step at once: [seq, batch, gates*hidden], realized: one matrix
  // product over the sequence reads W once, where inlined into each step's kernel every step
  // would read all of W for its one row (each element is used once, so the scheduler's cost
  // function alone keeps it inline).
  Tensor input_projection(Ctx& c, int64_t d) const {
    int64_t in = x.dim(2), gh = gates * hidden;
    Tensor p = x.contiguous().matmul(weight(c, 1, d, gh, in).transpose());  // X in rows (often a transposed view)
    if (c.has(3)) {
      const Tensor& b = c.in(3);
      if (b.shape() != Shape{dirs, 2 * gh})
        c.fail("B has shape " + shape_str(b.shape()) + ", expected " + shape_str({dirs, 2 * gh}));
      Tensor bd = b.slice({d}, {d + 1}, {0}, {1}).reshape({2, gh});
      p = p + bd.slice({0}, {1}, {0}, {1}).reshape({gh});
      if (!skip_recurrent_bias) p = p + bd.slice({1}, {2}, {0}, {1}).reshape({gh});
    }
    return p.contiguous();
  }
  Tensor step_input(const Tensor& proj, int64_t t) const {
    return proj.slice({t}, {t + 1}, {0}, {1}).reshape({batch, gates * hidden});
  }
  // Gate g of a [batch, gates*hidden] tensor.
  Tensor gate(const Tensor& all, int64_t g) const { return all.slice({g * hidden}, {(g + 1) * hidden}, {1}, {1}); }
  std::vector<int64_t> order(int64_t d) const {
    std::vector<int64_t> ts;
    for (int64_t t = 0; t < seq; ++t) ts.push_back(reverse[size_t(d)] ? seq - 1 - t : t);
    return ts;
  }
  bool skip_recurrent_bias = false;  // GRU with linear_before_reset adds it inside the reset gate
};

// Outputs Y, Y_h (and Y_c for LSTM) as far as the node asks for them.
Outs outputs(Ctx& c, Outs all) {
  size_t n = size_t(c.node.output_size());
  all.resize(std::min(all.size(), n));
  return all;
}

Outs lstm(Ctx& c) {
  Recurrence r(c, 4);
  auto act = activations(c, {"Sigmoid", "Tanh", "Tanh"}, r.dirs);
  bool input_forget = c.attr_int("input_forget", 0) != 0;
  int64_t H = r.hidden;
  std::vector<std::vector<Tensor>> ys(size_t(r.dirs), std::vector<Tensor>(size_t(r.seq)));
  std::vector<Tensor> hs, cs;
  for (int64_t d = 0; d < r.dirs; ++d) {
    const Activation &f = act[size_t(3 * d)], &g = act[size_t(3 * d + 1)], &h_act = act[size_t(3 * d + 2)];
    Tensor proj = r.input_projection(c, d);
    Tensor rt = r.weight(c, 2, d, 4 * H, H).transpose();
    std::optional<Tensor> pi, po, pf;
    if (c.has(7)) {
      const Tensor& p = c.in(7);
      if (p.shape() != Shape{r.dirs, 3 * H})
        c.fail("P has shape " + shape_str(p.shape()) + ", expected " + shape_str({r.dirs, 3 * H}));
      Tensor pd = p.slice({d}, {d + 1}, {0}, {1}).reshape({3, H});
      pi = pd.slice({0}, {1}, {0}, {1}), po = pd.slice({1}, {2}, {0}, {1}), pf = pd.slice({2}, {3}, {0}, {1});
    }
    Tensor h = r.initial(c, 5, d), cell = r.initial(c, 6, d);
    for (int64_t t : r.order(d)) {
      Tensor z = r.step_input(proj, t) + h.matmul(rt);
      Tensor zi = r.gate(z, 0), zo = r.gate(z, 1), zf = r.gate(z, 2), zc = r.gate(z, 3);
      if (pi) zi = zi + cell * *pi, zf = zf + cell * *pf;
      Tensor i = activate(c, f, r.clipped(zi));
      Tensor fg = input_forget ? i.full_like(1) - i : activate(c, f, r.clipped(zf));
      Tensor cand = activate(c, g, r.clipped(zc));
      Tensor cell_next = fg * cell + i * cand;
      if (po) zo = zo + cell_next * *po;
      Tensor o = activate(c, f, r.clipped(zo));
      Tensor h_next = o * activate(c, h_act, cell_next);
      h = r.hold(t, h_next, h);
      cell = r.hold(t, cell_next, cell);
      ys[size_t(d)][size_t(t)] = h;
    }
    hs.push_back(h), cs.push_back(cell);
  }
  return outputs(c, {r.stack(ys), r.final_state(hs), r.final_state(cs)});
}

Outs gru(Ctx& c) {
  Recurrence r(c, 3);
  auto act = activations(c, {"Sigmoid", "Tanh"}, r.dirs);
  bool linear_before_reset = c.attr_int("linear_before_reset", 0) != 0;
  r.skip_recurrent_bias = true;  // added per gate below: the h gate's sits inside the reset product
  int64_t H = r.hidden;
  std::vector<std::vector<Tensor>> ys(size_t(r.dirs), std::vector<Tensor>(size_t(r.seq)));
  std::vector<Tensor> hs;
  for (int64_t d = 0; d < r.dirs; ++d) {
    const Activation &f = act[size_t(2 * d)], &g = act[size_t(2 * d + 1)];
    Tensor proj = r.input_projection(c, d);
    Tensor rw = r.weight(c, 2, d, 3 * H, H);
    Tensor rzr = rw.slice({0}, {2 * H}, {0}, {1}).transpose(), rh = rw.slice({2 * H}, {3 * H}, {0}, {1}).transpose();
    Tensor rb = Tensor::full(c.g, {3 * H}, 0, r.x.dtype());
    if (c.has(3)) rb = c.in(3).slice({d}, {d + 1}, {0}, {1}).reshape({6 * H}).slice({3 * H}, {6 * H}, {0}, {1});
    Tensor rb_zr = rb.slice({0}, {2 * H}, {0}, {1}), rb_h = rb.slice({2 * H}, {3 * H}, {0}, {1});
    Tensor h = r.initial(c, 5, d);
    for (int64_t t : r.order(d)) {
      Tensor xin = r.step_input(proj, t);
      Tensor zr = xin.slice({0}, {2 * H}, {1}, {1}) + h.matmul(rzr) + rb_zr;
      Tensor z = activate(c, f, r.clipped(zr.slice({0}, {H}, {1}, {1})));
      Tensor rg = activate(c, f, r.clipped(zr.slice({H}, {2 * H}, {1}, {1})));
      Tensor xh = xin.slice({2 * H}, {3 * H}, {1}, {1});
      Tensor pre = linear_before_reset ? xh + rg * (h.matmul(rh) + rb_h) : xh + (rg * h).matmul(rh) + rb_h;
      Tensor cand = activate(c, g, r.clipped(pre));
      Tensor h_next = (z.full_like(1) - z) * cand + z * h;
      h = r.hold(t, h_next, h);
      ys[size_t(d)][size_t(t)] = h;
    }
    hs.push_back(h);
  }
  return outputs(c, {r.stack(ys), r.final_state(hs)});
}

Outs rnn(Ctx& c) {
  Recurrence r(c, 1);
  auto act = activations(c, {"Tanh"}, r.dirs);
  std::vector<std::vector<Tensor>> ys(size_t(r.dirs), std::vector<Tensor>(size_t(r.seq)));
  std::vector<Tensor> hs;
  for (int64_t d = 0; d < r.dirs; ++d) {
    Tensor proj = r.input_projection(c, d);
    Tensor rt = r.weight(c, 2, d, r.hidden, r.hidden).transpose();
    Tensor h = r.initial(c, 5, d);
    for (int64_t t : r.order(d)) {
      Tensor h_next = activate(c, act[size_t(d)], r.clipped(r.step_input(proj, t) + h.matmul(rt)));
      h = r.hold(t, h_next, h);
      ys[size_t(d)][size_t(t)] = h;
    }
    hs.push_back(h);
  }
  return outputs(c, {r.stack(ys), r.final_state(hs)});
}
}  // namespace

void add_rnn_ops(OpTable& t) {
  t["LSTM"] = lstm;
  t["GRU"] = gru;
  t["RNN"] = rnn;
}

}  // namespace tgc
