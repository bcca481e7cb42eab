#include "passes/tensor_cores.h"

#include "ir/symbolic.h"

namespace tgc {
namespace {

// An operand of the product: LOAD(f16 or bf16) under CAST(f32), or LOAD(f32).
const UOp* operand_load(const UOp* u) {
  const UOp* l = u->op == Op::Cast && u->dtype == DType::F32 && is_half(u->src[0]->dtype) ? u->src[0] : u;
  bool typed = l->dtype == DType::F32 || (l != u && is_half(l->dtype));
  return l->op == Op::Load && typed && l->src.size() == 2 ? l : nullptr;
}

// Whether WMMA can load 16x16 tiles of `load`'s matrix, with rows along `row` and columns along
// `col` (tiles at multiples of 16 of both): the index is exactly base + row*ld_row + col*ld_col
// with one of the two strides 1, the other a multiple of 8 elements (16 bytes), and every tile
// starts 32-byte aligned (the base is a multiple of 16 elements along every other range).
struct Walk {
  bool ok = false, contiguous_cols = false;
  int64_t ld = 0;
};
Walk walk(Graph& g, const UOp* load, const UOp* row, const UOp* col, const std::vector<const UOp*>& ranges) {
  const UOp* idx = load->src[1];
  std::optional<int64_t> sr = stride_along(g, idx, row), sc = stride_along(g, idx, col);
  if (!sr || !sc || (*sr != 1 && *sc != 1)) return {};
  Sym s{g};
  const UOp* base = simplify(g, s.add(idx, s.add(s.mul(row, -*sr), s.mul(col, -*sc))));
  if (depends_on(base, row) || depends_on(base, col)) return {};
  std::unordered_map<const UOp*, const UOp*> zero;
  for (const UOp* r : ranges) {
    if (!depends_on(base, r)) continue;
    std::optional<int64_t> st = stride_along(g, base, r);
    if (!st || *st % kTensorCoreTile != 0) return {};
    zero[r] = g.cint(0);
  }
  const UOp* at0 = simplify(g, substitute(g, base, zero));
  if (!at0->is_const() || at0->ival() % kTensorCoreTile != 0) return {};
  int64_t ld = *sc == 1 ? *sr : *sc;
  if (ld % 8 != 0 || ld < kTensorCoreTile) return {};
  return {true, *sc == 1, ld};
}

// Whether `u` is computed from 16-bit or integer values only (no f32 load): a weight stored in f16
// or quantized, which rounding to f16 changes little or not at all.
bool from_narrow_values(const UOp* u) {
  bool loads = false;
  for (const UOp* x : toposort({u}))
    if (x->op == Op::Load && x->src[0]->op == Op::Buffer) {
      if (x->dtype == DType::F32 || x->dtype == DType::F64) return false;
      loads = true;
    } else if (x->op == Op::KReduce) {
      return false;
    }
  return loads;
}

// Converted operands (see the header): an f32 factor from narrow values times another f32 factor
// without a reduce inside.
bool convertible(const UOp* x, const UOp* y) {
  auto plain = [](const UOp* u) {
    for (const UOp* v : toposort({u}))
      if (v->op == Op::KReduce) return false;
    return u->dtype == DType::F32;
  };
  return plain(x) && plain(y) && (from_narrow_values(x) != from_narrow_values(y));
}

}  // namespace

bool has_tensor_cores(const TargetProfile& t, DType type) {
  if (type == DType::F32 && !t.tf32) return false;
  return t.gpu && t.gpu_arch.rfind("sm_", 0) == 0 &&
         std::atoi(t.gpu_arch.c_str() + 3) >= (type == DType::F16 ? 70 : 80);
}

std::optional<TensorCorePlan> tensor_core_plan(Graph& g, const Kernel& k, std::string* why) {
  auto no = [&](const char* w) -> std::optional<TensorCorePlan> {
    if (why) *why = w;
    return std::nullopt;
  };
  const UOp* st = k.ast;
  if (st->src.size() > 3) return no("the store is gated");
  if (!k.local_ranges.empty()) return no("the kernel has local ranges");
  const UOp* reduce = nullptr;
  for (const UOp* u : toposort({st}))
    if (u->op == Op::KReduce) {
      if (reduce) return no("more than one reduce");
      reduce = u;
    }
  if (!reduce || reduce->reduce().op != Op::Add || reduce->dtype != DType::F32) return no("no f32 sum");
  if (reduce->src.size() != 2) return no("the sum runs over more than one range");
  const UOp* kr = reduce->src[1];
  const UOp* mul = reduce->src[0];
  if (mul->op != Op::Mul) return no("the sum is not of products");
  const UOp *x = operand_load(mul->src[0]), *y = operand_load(mul->src[1]);
  const bool convert = (!x || !y || x->dtype != y->dtype) && !k.cuda_cores && convertible(mul->src[0], mul->src[1]);
  if (convert)
    x = mul->src[0], y = mul->src[1];
  else if (!x || !y || x->dtype != y->dtype)
    return no("the products are not of two loads of one type (f16, bf16 or f32)");
  std::vector<const UOp*> ranges = k.global_ranges;
  ranges.push_back(kr);
  const UOp* late = nullptr;  // the one output range that may end at a run-time size: the rows
  for (const UOp* r : ranges)
    if (!r->src[0]->is_const()) {
      if (late || r == kr) return no("a range ends at a run-time size");
      late = r;
    }
  if (range_extent(kr) % kTensorCoreTile != 0) return no("the reduce is not a multiple of 16 long");
  // Rows: an output range that A follows and B does not; columns the other way round.
  for (int swap = 0; swap < 2; ++swap) {
    const UOp* a = swap ? y : x;
    const UOp* b = swap ? x : y;
    for (const UOp* m : k.global_ranges)
      for (const UOp* n : k.global_ranges) {
        if (m == n || range_extent(m) % kTensorCoreTile || range_extent(n) % kTensorCoreTile) continue;
        const UOp *ai = convert ? a : a->src[1], *bi = convert ? b : b->src[1];
        if (!depends_on(ai, m) || depends_on(ai, n) || !depends_on(bi, n) || depends_on(bi, m)) continue;
        // Only the rows may end at a run-time size (their bound's blocks leave past it).
        if (late && (late != m || k.cuda_cores)) continue;
        // Converted factors are computed, not loaded: any walk will do.
        Walk wa = convert ? Walk{true, true, 0} : walk(g, a, m, kr, ranges);
        Walk wb = convert ? Walk{true, true, 0} : walk(g, b, kr, n, ranges);
        if (!wa.ok || !wb.ok) continue;
        int64_t others = 1;
        for (const UOp* r : k.global_ranges)
          if (r != m && r != n) others *= range_extent(r);
        if (k.cuda_cores) {
          // Blocks of 128 x 128 outputs (8 x 8 per thread) where 264 of them remain (two per SM of
          // an H100), else 64 x 64 (4 x 4): A and B row-major, 4-vectors along their rows.
          if (a->dtype != DType::F32) return no("CUDA-core tiles are for f32 operands");
          if (!wa.contiguous_cols || !wb.contiguous_cols || wa.ld % 4 || wb.ld % 4)
            return no("CUDA-core tiles need row-major A and B");
          int64_t em = range_extent(m), en = range_extent(n);
          if (em % 64 || en % 64) return no("CUDA-core tiles need 64 | rows and 64 | columns");
          // 8 or 16 along the reduce per step: one 4-vector of A and one of B per thread.
          int64_t t = em % 128 == 0 && en % 128 == 0 && em / 128 * (en / 128) * others >= 264 ? 8 : 4;
          return TensorCorePlan{reduce,   m,    n,    kr,    a,     b,
                                a->dtype, true, true, wa.ld, wb.ld, TensorCoreTiles{t, t, 8, 64 / t, true}};
        }
        // The largest warp tile that leaves kEnoughWarps warps (4 x 4 fragments: 8 fragment loads
        // per 16 products, 128 accumulator registers per thread), else one fragment per warp;
        // up to 4 warps per block. H100, 4096^3: 4.80 ms with 1 x 1, 1.96 with 2 x 4, 1.28 with
        // 4 x 4; 1024^3: 0.052 ms with 2 x 4 (512 warps), 0.060 with 4 x 4 (256).
        constexpr int64_t kEnoughWarps = 512;
        int64_t fm = range_extent(m) / kTensorCoreTile, fn = range_extent(n) / kTensorCoreTile;
        TensorCoreTiles t{1, 1, 1};
        for (auto [wm, wn] :
             {std::pair<int64_t, int64_t>{4, 4}, {2, 4}, {4, 2}, {2, 2}, {1, 4}, {4, 1}, {1, 2}, {2, 1}})
          if (fm % wm == 0 && fn % wn == 0 && fm / wm * (fn / wn) * others >= kEnoughWarps) {
            t.wm = wm, t.wn = wn;
            break;
          }
        int64_t warps = fm / t.wm * (fn / t.wn) * others;
        t.warps = warps % 4 == 0 ? 4 : warps % 2 == 0 ? 2 : 1;
        // Staged 64 along the reduce at a time, or 32 where a warp holds 4 x 4 fragments (with
        // 64, the chunks in flight crowd its registers: 4096^3 0.448 ms with 32, 0.482 with 64;
        // 1024^3 with 2 x 4: 0.0272 with 32, 0.0218 with 64).
        // f32 operands (tf32) take twice the shared memory: 32 along the reduce always (35 KB at
        // most, of the 48 KB a block may have without opting in to more).
        int64_t k16 = range_extent(kr) / kTensorCoreTile;
        bool wide = !convert && a->dtype == DType::F32;
        int64_t steps = !wide && t.wm * t.wn <= 8 && k16 % 4 == 0 ? 4 : k16 % 2 == 0 ? 2 : 0;
        if (wa.contiguous_cols && wb.contiguous_cols && fm % (2 * t.wm) == 0 && fn % (2 * t.wn) == 0 && steps)
          t.staged = steps * kTensorCoreTile, t.warps = 4;
        // Converted factors go through shared memory, B column by column (its reduce contiguous,
        // as a weight's rows are); rows that end at a run-time size need the staged blocks' exits.
        if ((convert || late) && !t.staged) continue;
        if (convert) return TensorCorePlan{reduce, m, n, kr, a, b, DType::F16, true, false, 0, 0, t, true};
        return TensorCorePlan{reduce, m,     n, kr, a, b, a->dtype, wa.contiguous_cols, wb.contiguous_cols,
                              wa.ld,  wb.ld, t};
      }
  }
  return no("no pair of output ranges along which the two operands are 16x16 tiles WMMA can load");
}

}  // namespace tgc
