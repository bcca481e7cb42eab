// The lazy Tensor API: every higher-level operation (matmul, conv, softmax, norms, gather...)
// built from the three op kinds of the IR. Nothing is computed here; a Tensor is a UOp handle.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/uop.h"

namespace tgc {

// Dense host data with a dtype and shape: model weights, inputs, interpreter results, .npy files.
struct HostTensor {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<uint8_t> bytes;

  HostTensor() = default;
  HostTensor(DType t, Shape s) : dtype(t), shape(std::move(s)), bytes(size_t(tgc::numel(shape) * dtype_size(t))) {}
  int64_t numel() const { return tgc::numel(shape); }
  double get(int64_t i) const;  // element i as double
  void set(int64_t i, double v);
  std::vector<int64_t> to_ints() const;  // every element as int64 (for shape-like tensors)
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(Graph& g, const UOp* u) : g_(&g), u_(u) {}

  // ---- creation --------------------------------------------------------------------------
  static Tensor input(Graph& g, const std::string& name, DType t, const Shape& shape);
  static Tensor weight(Graph& g, const std::string& name, HostTensor data);
  // A weight over bytes held elsewhere (a mapped file): never copied.
  static Tensor weight(Graph& g, const std::string& name, DType t, const Shape& shape,
                       std::shared_ptr<const Bytes> bytes);
  static Tensor full(Graph& g, const Shape& shape, double value, DType t);
  static Tensor arange(Graph& g, int64_t n, DType t = DType::I64);  // [0, 1, ..., n-1]
  // A buffer that persists across runs of the compiled model (a KV cache), zero at first. Read
  // it through the result of assign() only, so that its readers run after the write.
  static Tensor state(Graph& g, const std::string& name, DType t, const Shape& shape);
  // The value of an index expression over declared run-time dims (VARs) and constants, as a
  // rank-0 tensor of dtype t.
  static Tensor index_value(Graph& g, const UOp* expr, DType t);
  // This state buffer after `value` is written into it in place, at `offset` along `axis` (an
  // index expression over VARs and constants, known at run time, which must keep the write
  // within the buffer); value spans the buffer's other axes. One kernel writes it; its
  // consumers read the buffer.
  Tensor assign(const Tensor& value, int64_t axis, const UOp* offset) const;
  Tensor full_like(double value) const { return full(*g_, shape(), value, dtype()); }
  Tensor scalar(double value) const { return full(*g_, {}, value, dtype()); }  // same dtype, rank 0

  // ---- properties ------------------------------------------------------------------------
  const UOp* uop() const { return u_; }
  Graph& graph() const { return *g_; }
  const Shape& shape() const { return u_->shape; }
  int64_t dim(int64_t axis) const { return shape()[size_t(norm_axis(axis))]; }
  int ndim() const { return int(shape().size()); }
  int64_t numel() const { return tgc::numel(shape()); }
  DType dtype() const { return u_->dtype; }
  int64_t norm_axis(int64_t axis) const;  // negative axes count from the end; checks range

  // ---- movement (never copies) -----------------------------------------------------------
  Tensor reshape(Shape s) const;  // one -1 allowed
  Tensor permute(std::vector<int64_t> order) const;
  Tensor expand(const Shape& s) const;  // s may have more dims (numpy broadcasting)
  Tensor pad(const std::vector<std::pair<int64_t, int64_t>>& p, double value = 0) const;  // negative = crop
  Tensor shrink(const std::vector<std::pair<int64_t, int64_t>>& bounds) const;
  Tensor flip(const std::vector<int64_t>& axes) const;
  Tensor transpose(int64_t a = -2, int64_t b = -1) const;
  Tensor squeeze(std::vector<int64_t> axes) const;    // empty: every size-1 axis
  Tensor unsqueeze(std::vector<int64_t> axes) const;  // axes of the result
  Tensor flatten(int64_t axis = 1) const;             // ONNX Flatten: 2-D result
  Tensor slice(const std::vector<int64_t>& starts, const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
               const std::vector<int64_t>& steps) const;
  Tensor repeat(const std::vector<int64_t>& reps) const;  // tile
  static Tensor cat(const std::vector<Tensor>& ts, int64_t axis);
  std::vector<Tensor> split(const std::vector<int64_t>& sizes, int64_t axis) const;
  Tensor gather(const Tensor& indices, int64_t axis) const;  // ONNX Gather

  // ---- indexing (tensor_index.cpp) -------------------------------------------------------
  // x[..., idx[o], ...] along `axis` for compile-time indices (negative count from the end).
  // Movement ops where the indices follow floor((q*o + r) / p) + a, possibly with a clamped run
  // at either end (nearest/linear resampling, strided and repeated slices); a one-hot reduce
  // otherwise.
  Tensor take(int64_t axis, std::vector<int64_t> idx) const;
  enum class PadMode { Constant, Reflect, Edge, Wrap };
  // Pads by mirroring (reflect: without repeating the edge), repeating the edge, or wrapping
  // around as on a torus (also for pads longer than the axis). Negative amounts crop first.
  Tensor pad(const std::vector<std::pair<int64_t, int64_t>>& p, PadMode mode) const;
  // ONNX GatherElements: out[i] = x[i with axis replaced by indices[i]]; out has indices' shape.
  Tensor gather_elements(const Tensor& indices, int64_t axis) const;
  // ONNX GatherND: indices [..., k] address the first k dims after `batch_dims`.
  Tensor gather_nd(const Tensor& indices, int64_t batch_dims) const;
  enum class Reduction { None, Add, Mul, Max, Min };
  // ONNX ScatterElements / ScatterND: a copy of x with `updates` written (or combined) at the
  // indexed positions. Of duplicate indices with Reduction::None the last one wins.
  Tensor scatter_elements(const Tensor& indices, const Tensor& updates, int64_t axis, Reduction r) const;
  Tensor scatter_nd(const Tensor& indices, const Tensor& updates, Reduction r) const;
  // The k largest (or smallest) values along axis, sorted, ties by lower index first, and
  // their int64 indices.
  std::pair<Tensor, Tensor> topk(int64_t k, int64_t axis, bool largest) const;
  Tensor cumsum(int64_t axis, bool exclusive, bool reverse) const;
  // One-hot over a new axis of size depth at `axis` of the result: on where index == position
  // (negative indices count from depth), off elsewhere.
  static Tensor one_hot(const Tensor& indices, int64_t depth, int64_t axis, const Tensor& off, const Tensor& on);
  // Upper (j - i >= k) or lower (j - i <= k) triangle of the last two dims, zeros elsewhere.
  Tensor trilu(int64_t k, bool upper) const;

  // ---- elementwise -----------------------------------------------------------------------
  Tensor cast(DType t) const;
  Tensor bitcast(DType t) const;
  Tensor operator-() const;
  friend Tensor operator+(const Tensor& a, const Tensor& b);
  friend Tensor operator-(const Tensor& a, const Tensor& b);
  friend Tensor operator*(const Tensor& a, const Tensor& b);
  friend Tensor operator/(const Tensor& a, const Tensor& b);  // float: a*recip(b); int: truncates
  // Float division rounded once, as C's a / b (a*recip(b) may differ in the last bit).
  Tensor div_exact(const Tensor& b) const;
  Tensor operator+(double v) const { return *this + scalar(v); }
  Tensor operator-(double v) const { return *this - scalar(v); }
  Tensor operator*(double v) const { return *this * scalar(v); }
  Tensor operator/(double v) const { return *this / scalar(v); }
  Tensor maximum(const Tensor& b) const;
  Tensor minimum(const Tensor& b) const;
  Tensor mod(const Tensor& b) const;   // ONNX fmod=0 semantics (result has the divisor's sign)
  Tensor fmod(const Tensor& b) const;  // C semantics
  Tensor lt(const Tensor& b) const;
  Tensor gt(const Tensor& b) const { return b.lt(*this); }
  Tensor le(const Tensor& b) const { return gt(b).logical_not(); }
  Tensor ge(const Tensor& b) const { return lt(b).logical_not(); }
  Tensor eq(const Tensor& b) const { return ne(b).logical_not(); }
  Tensor ne(const Tensor& b) const;
  Tensor logical_not() const;
  Tensor logical_and(const Tensor& b) const;
  Tensor logical_or(const Tensor& b) const;
  Tensor logical_xor(const Tensor& b) const;
  Tensor bitwise(Op op, const Tensor& b) const;  // And/Or/Xor/Shl/Shr on integers
  static Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
  // acc + sum over k < 4 of u8(byte k of a) * i8(byte k of b): a and b are 32-bit words of
  // packed bytes, acc and the result i32 (Op::Dot4). Shapes broadcast.
  static Tensor dot4(const Tensor& a, const Tensor& b, const Tensor& acc);

  Tensor exp() const;
  Tensor exp2() const;
  Tensor log() const;
  Tensor log2() const;
  Tensor sqrt() const;
  Tensor rsqrt() const { return sqrt().reciprocal(); }
  Tensor reciprocal() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tan() const { return sin() / cos(); }
  Tensor atan() const;
  Tensor asin() const;
  Tensor acos() const;
  Tensor sinh() const;
  Tensor cosh() const;
  Tensor asinh() const;
  Tensor acosh() const;
  Tensor atanh() const;
  Tensor pow(const Tensor& e) const;
  Tensor abs() const;
  Tensor sign() const;
  Tensor trunc() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor round() const;  // half to even, as ONNX Round
  Tensor relu() const;
  Tensor leaky_relu(double alpha) const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  Tensor erf() const;
  Tensor gelu(bool tanh_approx = false) const;
  Tensor clip(std::optional<double> lo, std::optional<double> hi) const;
  Tensor clip(const Tensor& lo, const Tensor& hi) const;

  // ---- reductions (axes empty = all) -----------------------------------------------------
  Tensor sum(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  // A float sum in a fixed order (ReduceArg::ordered): row-major over `axes` (the last one
  // innermost), from zero, each step rounded alone, as a library's kernel would sum, for results
  // that must equal its bits (frontend/onnx/onnx_mlas_order.h).
  Tensor sum_in_order(std::vector<int64_t> axes, bool keepdim = false) const;
  Tensor mean(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor max(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor min(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor prod(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor argmax(int64_t axis, bool keepdim = false) const;  // first occurrence, i64
  Tensor argmin(int64_t axis, bool keepdim = false) const;

  // ---- neural network building blocks ---------------------------------------------------
  Tensor matmul(const Tensor& w) const;  // numpy matmul: 1-D promotion, batch broadcasting
  // N-d convolution over the trailing dims. x: [N, Cin, *spatial], w: [Cout, Cin/groups, *kernel].
  // pads: begin pads then end pads per spatial dim (ONNX order). `combine`: Mul, or Dot4 for
  // 32-bit words of packed bytes (u8 x, i8 w; an i32 sum of dot4 products, Op::Dot4).
  Tensor conv(const Tensor& w, const std::optional<Tensor>& bias, const std::vector<int64_t>& strides,
              const std::vector<int64_t>& pads, const std::vector<int64_t>& dilations, int64_t groups,
              Op combine = Op::Mul) const;
  // conv's products before their sum: [N, groups, Cout/groups, *out, Cin/groups, *kernel].
  Tensor conv_products(const Tensor& w, const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                       const std::vector<int64_t>& dilations, int64_t groups, Op combine = Op::Mul) const;
  // Transposed convolution (the gradient of conv). w: [Cin, Cout/groups, *kernel]; pads are
  // removed from the full output, output_padding added at the end of each spatial dim.
  Tensor conv_transpose(const Tensor& w, const std::optional<Tensor>& bias, const std::vector<int64_t>& strides,
                        const std::vector<int64_t>& pads, const std::vector<int64_t>& dilations,
                        const std::vector<int64_t>& output_padding, int64_t groups) const;
  // Sliding windows over the last kernel.size() dims: [..., *out, *kernel].
  Tensor pool(const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
              const std::vector<int64_t>& dilations) const;
  Tensor max_pool(const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                  const std::vector<int64_t>& pads, const std::vector<int64_t>& dilations, bool ceil_mode) const;
  // Max pooling plus the flat input index (row-major, or column-major over the spatial dims) of
  // each maximum, first in window order on ties.
  std::pair<Tensor, Tensor> max_pool_with_indices(const std::vector<int64_t>& kernel,
                                                  const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                                                  const std::vector<int64_t>& dilations, bool ceil_mode,
                                                  bool column_major) const;
  Tensor avg_pool(const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                  const std::vector<int64_t>& pads, bool count_include_pad, bool ceil_mode) const;
  Tensor softmax(int64_t axis) const;
  Tensor log_softmax(int64_t axis) const;
  Tensor layer_norm(std::vector<int64_t> axes, const std::optional<Tensor>& scale, const std::optional<Tensor>& bias,
                    double eps) const;
  // Inference batch norm over axis 1.
  Tensor batch_norm(const Tensor& scale, const Tensor& bias, const Tensor& mean, const Tensor& var, double eps) const;
  Tensor contiguous() const;

 private:
  Tensor make(Op op, std::vector<const UOp*> src, Arg arg = {}, std::optional<DType> t = {}) const;
  Tensor reduce(Op op, std::vector<int64_t> axes, bool keepdim, bool ordered = false) const;
  static void broadcast_pair(Tensor& a, Tensor& b);
  Tensor pad_min_value(const std::vector<std::pair<int64_t, int64_t>>& p) const;  // pad with -inf / lowest
  Graph* g_ = nullptr;
  const UOp* u_ = nullptr;
};

Shape broadcast_shape(const Shape& a, const Shape& b);  // numpy rules; throws tgc::Error

}  // namespace tgc
