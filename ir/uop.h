// The one node type of the IR: UOp{op, dtype, src, arg}, immutable and hash-consed in a Graph.
//
// Tensor-level nodes carry a static shape; kernel-level nodes (index arithmetic, loads, stores,
// loop ranges) are scalars with an empty shape. Index/bool scalars also carry their value bounds
// [vmin, vmax], which the symbolic simplifier uses to cancel divisions, modulos and masks.
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include "ir/bytes.h"
#include "ir/dtype.h"

namespace tgc {

enum class Op : uint8_t {
  // Sources.
  Buffer,
  Const,
  Var,
  Assign,
  Contiguous,
  // Elementwise: unary, binary, ternary.
  Neg,
  Exp2,
  Log2,
  Sin,
  Sqrt,
  Recip,
  Cast,
  Bitcast,
  Trunc,
  Add,
  Mul,
  Max,
  Mod,
  IDiv,
  CmpLt,
  CmpNe,
  And,
  Or,
  Xor,
  Shl,
  Shr,
  Where,
  MulAcc,
  // DOT4(a, b, acc): acc + the sum of the four products u8(byte k of a) * i8(byte k of b), on
  // 32-bit words of packed bytes (an int8 dot-product unit: x86 VNNI vpdpbusd, one lane).
  Dot4,
  // Reduce (keeps rank; reduced axes become 1).
  Reduce,
  // Movement: never copies, becomes index arithmetic when kernels are formed.
  Reshape,
  Permute,
  Expand,
  Pad,
  Shrink,
  Flip,
  // Kernel level, made by the scheduler: loop ranges, memory access, the reduce over ranges.
  Range,
  Load,
  Store,
  KReduce,
};

std::string_view op_name(Op op);
bool is_unary(Op op);
bool is_binary(Op op);
bool is_elementwise(Op op);
bool is_movement(Op op);
// Ops that compute values (as opposed to sources and movement): what a kernel can fuse or store.
bool is_compute(Op op);

using Shape = std::vector<int64_t>;
int64_t numel(const Shape& s);
std::string shape_str(const Shape& s);

// Kinds of loop range in a kernel: parallel output dims, serial output dims, reduction dims, and
// the parts that kernel optimizations split off: Upcast (expanded into copies at lowering),
// Local (a work-group thread id), Group (a reduce dim spread across the work-group).
enum class RangeKind : uint8_t { Global, Loop, Reduce, Upcast, Local, Group };

struct ReduceArg {
  Op op;  // Add, Max or Mul
  std::vector<int64_t> axes;
  // A sum in a fixed order: its axes' elements in row-major order (the last axis innermost), one
  // accumulator from the identity, each step rounded on its own (`acc + x*y` as one fused
  // multiply-add where the target has one, else a product and a sum). Kernels keep that order: no
  // vector lanes or work-group splits along its ranges, no reassociation (Tensor::sum_in_order).
  bool ordered = false;
  bool operator==(const ReduceArg&) const = default;
};
struct VarArg {
  std::string name;
  int64_t min, max;
  bool operator==(const VarArg&) const = default;
};
struct RangeArg {
  int64_t id;
  RangeKind kind;
  bool operator==(const RangeArg&) const = default;
};

// Const: double for float dtypes, int64_t otherwise. Buffer: int64_t buffer id.
// Reshape/Expand: new shape. Permute: order. Pad/Shrink/Flip: per-axis pairs or flags flattened.
using Arg = std::variant<std::monostate, int64_t, double, std::vector<int64_t>, ReduceArg, VarArg, RangeArg>;

struct UOp {
  Op op;
  DType dtype;
  std::vector<const UOp*> src;
  Arg arg;
  Shape shape;
  int64_t vmin = 0, vmax = 0;  // value bounds, meaningful for Index and Bool dtypes
  size_t hash = 0;             // structural hash: equal for equal graphs in any run (kernel cache keys)

  int64_t ival() const { return std::get<int64_t>(arg); }
  double fval() const {
    return std::holds_alternative<double>(arg) ? std::get<double>(arg) : double(std::get<int64_t>(arg));
  }
  const std::vector<int64_t>& ints() const { return std::get<std::vector<int64_t>>(arg); }
  const ReduceArg& reduce() const { return std::get<ReduceArg>(arg); }
  const RangeArg& range() const { return std::get<RangeArg>(arg); }
  const VarArg& var() const { return std::get<VarArg>(arg); }
  bool is_const() const { return op == Op::Const; }
  bool is_const(double v) const { return op == Op::Const && fval() == v; }
};

// Where a buffer's contents come from. State buffers persist across runs of the compiled model
// (KV caches): zero at first, written in place by ASSIGN kernels, never in the arena.
enum class BufferKind : uint8_t { Input, Weight, Intermediate, Output, State };

struct BufferInfo {
  std::string name;
  DType dtype;
  Shape shape;
  BufferKind kind;
  std::shared_ptr<const Bytes> data;  // weights only: raw little-endian bytes (owned or mapped)
  // A weight that the GPU reads as a 2D image, 4 elements per texel (codegen/gpu/image_weights.h).
  bool image = false;
};

// Owns all nodes and the buffer table. make() returns the existing node for a repeated request.
class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const UOp* make(Op op, DType dtype, std::vector<const UOp*> src = {}, Arg arg = {});

  // Convenience constructors for scalars used in index arithmetic and kernel bodies.
  const UOp* cint(int64_t v, DType t = DType::Index) { return make(Op::Const, t, {}, v); }
  const UOp* cfloat(double v, DType t) { return make(Op::Const, t, {}, v); }
  const UOp* constant(double v, DType t) { return is_float(t) ? cfloat(v, t) : cint(int64_t(v), t); }
  const UOp* var(const std::string& name, int64_t min, int64_t max) {
    return make(Op::Var, DType::Index, {}, VarArg{name, min, max});
  }
  const UOp* range(int64_t n, int64_t id, RangeKind kind) {
    return make(Op::Range, DType::Index, {cint(n)}, RangeArg{id, kind});
  }

  int64_t add_buffer(BufferInfo info);
  const BufferInfo& buffer(int64_t id) const { return buffers_.at(static_cast<size_t>(id)); }
  BufferInfo& buffer(int64_t id) { return buffers_.at(static_cast<size_t>(id)); }
  size_t num_buffers() const { return buffers_.size(); }
  size_t num_nodes() const { return nodes_.size(); }

  // Run-time dims (model/dynamic_dims.h). A VAR declared here has a slot in the vars
  // buffer (i64, one value per VAR in declaration order), which kernels read its value from.
  // Declare every VAR before building the graph: the buffer's shape is fixed by then.
  const UOp* declare_var(const std::string& name, int64_t min, int64_t max);
  // The declared VAR of that name, or nullptr.
  const UOp* find_var(const std::string& name) const;
  // `base`, or `base#2`, `base#3`, ...: the first name no VAR has (a node of an unrolled loop
  // that declares a VAR is imported once per iteration).
  std::string fresh_var_name(const std::string& base) const;
  const std::vector<const UOp*>& vars() const { return vars_; }
  int64_t vars_buffer() const { return vars_buffer_; }  // -1 without VARs
  int64_t var_slot(const UOp* var) const;
  // Axis `axis` of tensor node `u` follows a run-time dim, laid out at the VAR's maximum: its
  // size at run time is `extent`, an index expression over VARs (the VAR itself, or what a pad or
  // window made of it: (W + 2p - k) / s + 1). Loops over it (kernel outputs, reduces) stop there
  // and a pad's mask uses it (model/dynamic_dims.h).
  void set_var_axis(const UOp* u, int64_t axis, const UOp* extent) { var_axes_[{u, axis}] = extent; }
  const UOp* var_axis(const UOp* u, int64_t axis) const {
    auto it = var_axes_.find({u, axis});
    return it == var_axes_.end() ? nullptr : it->second;
  }

  // Where a Shrink's start (or a Pad's amount before) on `axis` follows a run-time dim: an index
  // expression over VARs instead of the constant in the op's arg, which is its value at the
  // bound (a reflect pad's slice [W - 65, W - 1), a concat's piece placed after W elements).
  void set_var_offset(const UOp* u, int64_t axis, const UOp* offset) { var_offsets_[{u, axis}] = offset; }
  const UOp* var_offset(const UOp* u, int64_t axis) const {
    auto it = var_offsets_.find({u, axis});
    return it == var_offsets_.end() ? nullptr : it->second;
  }

  // The least value of a VAR bound from the inputs at which the model's structure holds (a
  // conv's window fits; model/dim_axes); 1 unless set. The runtime refuses smaller sizes.
  void set_var_min(const UOp* var, int64_t min) { var_mins_[var] = min; }
  int64_t var_min(const UOp* var) const {
    auto it = var_mins_.find(var);
    return it == var_mins_.end() ? 1 : it->second;
  }

  // A VAR that stands for dims in multiples of `step` (a detector's image size in multiples
  // of 32): such a dim is step * the VAR's value, 1 to its max. 1 unless set.
  void set_var_step(const UOp* var, int64_t step) { var_steps_[var] = step; }
  int64_t var_step(const UOp* var) const {
    auto it = var_steps_.find(var);
    return it == var_steps_.end() ? 1 : it->second;
  }

  // A VAR whose value the model computes (a data-dependent size: how many elements NonZero
  // finds): `value` is an integer scalar node in [0, max], computed by a kernel at run time
  // before any kernel that depends on the VAR runs (the VAR's consumers read `value` too).
  void set_var_value(const UOp* var, const UOp* value) { var_values_[var] = value; }
  const UOp* var_value(const UOp* var) const {
    auto it = var_values_.find(var);
    return it == var_values_.end() ? nullptr : it->second;
  }

  // A sliding-window view (Tensor::pool): `u`'s last 2n axes are n window positions and n taps
  // of `of`'s last n axes, element (o, j) being of[o * stride + j * dilation]. The movement ops
  // that build it are internal; run-time dims see the view as one op (model/dim_axes).
  struct Window {
    const UOp* of;
    std::vector<int64_t> k, stride, dilation;
  };
  void set_window(const UOp* u, Window w) { windows_.try_emplace(u, std::move(w)); }
  const Window* window(const UOp* u) const {
    auto it = windows_.find(u);
    return it == windows_.end() ? nullptr : &it->second;
  }

  // An If on a run-time condition (frontends): `select` is the WHERE that picks a branch's
  // output, its condition (src[0], a broadcast scalar) computed at run time. Both branches are
  // in the graph; a backend may run only the kernels of the side taken (passes/branch_guards).
  // A side built for inputs cut shorter than the bound has `runs` (a bool scalar over VARs: the
  // run-time sizes it was built for) and `why` (for the error when it is taken at others).
  struct BranchSelect {
    const UOp* select = nullptr;
    const UOp* runs[2] = {nullptr, nullptr};  // else side, then side; nullptr: any size
    std::string why[2];
  };
  void add_branch_select(BranchSelect b) { branch_selects_.push_back(std::move(b)); }
  std::vector<BranchSelect>& branch_selects() { return branch_selects_; }
  const std::vector<BranchSelect>& branch_selects() const { return branch_selects_; }

  // Which model node a tensor node came from ("Conv conv1"), for listings like `inspect`.
  void set_origin(const UOp* u, const std::string& what) { origin_.try_emplace(u, what); }
  const std::string* origin(const UOp* u) const {
    auto it = origin_.find(u);
    return it == origin_.end() ? nullptr : &it->second;
  }

 private:
  struct Hash {
    size_t operator()(const UOp* u) const { return u->hash; }
  };
  struct Eq {
    bool operator()(const UOp* a, const UOp* b) const;
  };
  std::deque<UOp> nodes_;
  std::unordered_set<const UOp*, Hash, Eq> interned_;
  std::vector<BufferInfo> buffers_;
  std::unordered_map<const UOp*, std::string> origin_;
  std::vector<const UOp*> vars_;
  int64_t vars_buffer_ = -1;
  std::map<std::pair<const UOp*, int64_t>, const UOp*> var_axes_, var_offsets_;
  std::unordered_map<const UOp*, Window> windows_;
  std::unordered_map<const UOp*, const UOp*> var_values_;
  std::unordered_map<const UOp*, int64_t> var_steps_, var_mins_;
  std::vector<BranchSelect> branch_selects_;
};

// How many positions a loop RANGE covers in memory: its size, or, for a range over a run-time dim
// (bounded by a VAR), the VAR's upper bound -- the layout the kernels index.
inline int64_t range_extent(const UOp* r) { return r->src[0]->vmax; }

// Nodes reachable from `roots`, each after all of its sources.
std::vector<const UOp*> toposort(const std::vector<const UOp*>& roots);
// Whether `r` is `u` or reachable from it (an index that depends on a range).
bool depends_on(const UOp* u, const UOp* r);

}  // namespace tgc
