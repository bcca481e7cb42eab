// Signal processing: DFT and STFT as matmuls with compile-time cosine/sine tables (frames of an
// STFT are a sliding-window view), and the window functions, which are compile-time constants.
#include <cmath>

#include "frontend/onnx/onnx_ops.h"

namespace tgc {

namespace {
constexpr double kTwoPi = 6.283185307179586476925286766559;

// [n, bins] table of cos or sin(2 pi k t / n) for t < n, k < bins.
Tensor dft_table(Graph& g, int64_t n, int64_t bins, bool sine, DType t) {
  HostTensor h(t, {n, bins});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < bins; ++k) {
      double a = kTwoPi * double((i * k) % n) / double(n);  // reduce first: exact angles for large i*k
      h.set(i * bins + k, sine ? std::sin(a) : std::cos(a));
    }
  return Tensor::weight(g, sine ? "dft_sin" : "dft_cos", std::move(h));
}

// DFT over the last axis of re/im ([..., n]) into `bins` frequencies: [..., bins] each.
std::pair<Tensor, Tensor> dft_last(Graph& g, const Tensor& re, const std::optional<Tensor>& im, int64_t bins,
                                   bool inverse) {
  int64_t n = re.dim(-1);
  Tensor cs = dft_table(g, n, bins, false, re.dtype()), sn = dft_table(g, n, bins, true, re.dtype());
  // e^{-i a} = cos a - i sin a (forward); e^{+i a} for the inverse.
  double s = inverse ? 1 : -1;
  Tensor out_re = re.matmul(cs), out_im = re.matmul(sn) * s;
  if (im) out_re = out_re - im->matmul(sn) * s, out_im = out_im + im->matmul(cs);
  if (inverse) out_re = out_re * (1.0 / double(n)), out_im = out_im * (1.0 / double(n));
  return {out_re, out_im};
}

Tensor dft(Ctx& c) {
  const Tensor& x = c.in(0);
  int64_t rank = x.ndim();
  if (rank < 3 || (x.dim(-1) != 1 && x.dim(-1) != 2))
    c.fail("input must be [batch, ..., 1 or 2], got " + shape_str(x.shape()));
  int64_t axis = c.attr_int("axis", 1);
  if (axis < 0) axis += rank - 1;  // counts among the signal dims (the last dim is re/im)
  if (axis < 1 || axis >= rank - 1)
    c.fail("axis " + std::to_string(c.attr_int("axis", 1)) + " is not a signal axis of " + shape_str(x.shape()));
  bool inverse = c.attr_int("inverse", 0) != 0, onesided = c.attr_int("onesided", 0) != 0;
  int64_t n = x.dim(axis);
  if (c.has(1)) n = c.ints(1).at(0);
  if (n <= 0) c.fail("dft_length must be positive");
  // Signal axis last, cut or zero-padded to n.
  std::vector<int64_t> order;
  for (int64_t i = 0; i < rank - 1; ++i)
    if (i != axis) order.push_back(i);
  order.push_back(axis);
  auto part = [&](int64_t k) {
    Tensor p = x.slice({k}, {k + 1}, {rank - 1}, {1}).squeeze({rank - 1}).permute(order);
    std::vector<std::pair<int64_t, int64_t>> pad(size_t(rank - 1), {0, 0});
    pad.back() = {0, n - p.dim(-1)};
    return p.pad(pad);
  };
  Tensor re = part(0);
  std::optional<Tensor> im;
  if (x.dim(-1) == 2) im = part(1);
  int64_t bins = onesided ? n / 2 + 1 : n;
  auto [out_re, out_im] = dft_last(c.g, re, im, bins, inverse);
  std::vector<int64_t> back(order.size());
  for (size_t i = 0; i < order.size(); ++i) back[size_t(order[i])] = int64_t(i);
  return Tensor::cat({out_re.permute(back).unsqueeze({-1}), out_im.permute(back).unsqueeze({-1})}, -1);
}

Tensor stft(Ctx& c) {
  const Tensor& x = c.in(0);
  if (x.ndim() != 3 || (x.dim(2) != 1 && x.dim(2) != 2))
    c.fail("signal must be [batch, length, 1 or 2], got " + shape_str(x.shape()));
  int64_t step = c.ints(1).at(0);
  std::optional<Tensor> window;
  if (c.has(2)) window = c.in(2);
  int64_t len = c.has(3) ? c.ints(3).at(0) : window ? window->dim(0) : 0;
  if (len <= 0 || step <= 0) c.fail("frame_length and frame_step must be positive");
  if (len > x.dim(1))
    c.fail("frame_length " + std::to_string(len) + " exceeds the signal length " + std::to_string(x.dim(1)));
  bool onesided = c.attr_int("onesided", 1) != 0;
  auto frames = [&](int64_t k) {  // [batch, frames, len], windowed
    Tensor f = x.slice({k}, {k + 1}, {2}, {1}).squeeze({2}).pool({len}, {step}, {1});
    return window ? f * window->cast(f.dtype()) : f;
  };
  Tensor re = frames(0);
  std::optional<Tensor> im;
  if (x.dim(2) == 2) im = frames(1);
  auto [out_re, out_im] = dft_last(c.g, re, im, onesided ? len / 2 + 1 : len, false);
  return Tensor::cat({out_re.unsqueeze({-1}), out_im.unsqueeze({-1})}, -1);
}

// cos-sum windows: a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N = size (periodic) or size - 1.
Tensor window(Ctx& c, double a0, double a1, double a2) {
  int64_t size = c.ints(0).at(0);
  if (size < 0) c.fail("size must not be negative");
  bool periodic = c.attr_int("periodic", 1) != 0;
  DType t = dtype_from_onnx(int(c.attr_int("output_datatype", 1)));
  double denom = double(periodic ? size : size - 1);
  HostTensor h(t, {size});
  for (int64_t i = 0; i < size; ++i) {
    double a = denom > 0 ? kTwoPi * double(i) / denom : 0;
    h.set(i, a0 - a1 * std::cos(a) + a2 * std::cos(2 * a));
  }
  return Tensor::weight(c.g, c.node.output(0), std::move(h));
}
}  // namespace

void add_signal_ops(OpTable& t) {
  t["DFT"] = [](Ctx& c) -> Outs { return {dft(c)}; };
  t["STFT"] = [](Ctx& c) -> Outs { return {stft(c)}; };
  t["HannWindow"] = [](Ctx& c) -> Outs { return {window(c, 0.5, 0.5, 0)}; };
  t["HammingWindow"] = [](Ctx& c) -> Outs { return {window(c, 25.0 / 46, 21.0 / 46, 0)}; };
  t["BlackmanWindow"] = [](Ctx& c) -> Outs { return {window(c, 0.42, 0.5, 0.08)}; };
}

}  // namespace tgc
