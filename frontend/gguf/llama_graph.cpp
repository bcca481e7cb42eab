#include "frontend/gguf/llama_graph.h"

#include <cmath>
#include <limits>
#include <map>

#include "frontend/gguf/gguf_weights.h"
#include "frontend/gguf/int8_matmul.h"
#include "ir/error.h"

namespace tgc {

namespace {
// What a layer's attention depends on besides its weights: the rope tables (cos, sin) gathered at
// the run's positions and the mask [n, keys]. Global layers share one; sliding-window layers another.
struct LayerKind {
  Tensor cos, sin, mask;
};

struct Builder {
  Graph& g;
  const GgufFile& f;
  const LlamaParams& p;
  int64_t int8_rows;                             // > 0: int8 matmuls in tiles of this many rows (int8_matmul.h)
  mutable std::map<std::string, Tensor> loaded;  // one buffer per tensor (the tied head reuses the embedding's)

  const GgufTensorInfo* find(const std::string& name) const { return f.find_tensor(name); }

  // The tensor's entry, checked to have these dims (outer first, as the Tensor sees them).
  const GgufTensorInfo& info(const std::string& name, const Shape& shape) const {
    const GgufTensorInfo* t = find(name);
    if (!t) throw Error(f.path() + ": tensor '" + name + "' is missing");
    Shape got(t->dims.rbegin(), t->dims.rend());
    if (got != shape)
      throw Error(f.path() + ": tensor '" + name + "' is " + shape_str(got) + ", expected " + shape_str(shape));
    return *t;
  }

  Tensor weight(const std::string& name, const Shape& shape) const {
    if (auto it = loaded.find(name); it != loaded.end()) return it->second;
    Tensor w = gguf_weight(g, f, info(name, shape));
    g.set_origin(w.uop(), "GGUF " + name);
    return loaded[name] = w;
  }

  // x @ weight^T for the weight `name` [out, in].
  Tensor project(const Tensor& x, const std::string& name, int64_t out, int64_t in) const {
    const GgufTensorInfo& t = info(name, {out, in});
    if (int8_rows <= 0 || !int8_matmul_supported(t.type)) return x.matmul(weight(name, {out, in}).transpose());
    Int8Weight w = int8_weight(g, f, t, int8_rows);
    g.set_origin(w.words.uop(), "GGUF " + name);
    return int8_matmul(quantize_q8(x), w);
  }

  Tensor linear(const Tensor& x, const std::string& name, int64_t out, int64_t in) const {
    Tensor y = project(x, name + ".weight", out, in);
    if (find(name + ".bias")) y = y + weight(name + ".bias", {out});
    return y;
  }

  // RMSNorm over x's last axis (the embedding; qwen3's and gemma3's q and k: each head's values).
  Tensor rms_norm(const Tensor& x, const std::string& name) const {
    Tensor ms = (x * x).mean({-1}, true);
    return x * (ms + p.rms_eps).rsqrt() * weight(name, {x.dim(-1)});
  }

  // cos and sin of position * theta_i as llama.cpp's rope cache computes them (f32 steps), for
  // `positions` positions, laid out as the rotated elements pair up ([positions, n_rot] each):
  // pair i's two elements both read cos_i, and -sin_i and sin_i. `base` and `freq_scale`: the
  // layer's (gemma's sliding-window layers have their own).
  std::pair<Tensor, Tensor> rope_tables(int64_t positions, double base, double freq_scale,
                                        const std::string& name) const {
    int64_t half = p.n_rot / 2;
    HostTensor c(DType::F32, {positions, p.n_rot}), s(DType::F32, {positions, p.n_rot});
    const float theta_scale = std::pow(float(base), -2.0f / float(p.n_rot));
    for (int64_t pos = 0; pos < positions; ++pos) {
      float theta = float(pos);
      for (int64_t i = 0; i < half; ++i) {
        float ff = p.rope_freq_factors.empty() ? 1.0f : p.rope_freq_factors[size_t(i)];
        float t = float(freq_scale) * (theta / ff);
        for (int64_t k = 0; k < 2; ++k) {  // NeoX pairs element i with i + half, llama 2i with 2i+1
          int64_t at = pos * p.n_rot + (p.rope_neox ? i + k * half : 2 * i + k);
          c.set(at, std::cos(t));
          s.set(at, k ? std::sin(t) : -std::sin(t));
        }
        theta *= theta_scale;
      }
    }
    return {Tensor::weight(g, name + "_cos", std::move(c)), Tensor::weight(g, name + "_sin", std::move(s))};
  }

  // x [n, heads, head_dim] rotated pairwise by the tables cut to n rows: x * cos + x' * sin, x'
  // each element's partner (x0 * c - x1 * s and x1 * c + x0 * s, bit for bit). Elementwise over
  // movement ops, so it fuses into the kernel that reads it (a K/V cache write).
  Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin) const {
    int64_t n = x.dim(0), h = x.dim(1), hd = p.head_dim, half = p.n_rot / 2;
    Tensor rot = x.shrink({{0, n}, {0, h}, {0, p.n_rot}});
    Tensor partner = p.rope_neox ? rot.reshape({n, h, 2, half}).flip({2}) : rot.reshape({n, h, half, 2}).flip({3});
    auto table = [&](const Tensor& t) { return t.shrink({{0, n}, {0, p.n_rot}}).reshape({n, 1, p.n_rot}); };
    Tensor out = rot * table(cos) + partner.reshape({n, h, p.n_rot}) * table(sin);
    if (p.n_rot == hd) return out;
    return Tensor::cat({out, x.shrink({{0, n}, {0, h}, {p.n_rot, hd}})}, 2);
  }

  // tanh(x / c) * c in llama.cpp's steps (gemma's soft-capping of scores and logits).
  static Tensor softcap(const Tensor& x, float c) { return (x * double(1.0f / c)).tanh() * double(c); }

  // kind.mask [n, keys]: which keys each query sees. With a cache, k and v are written into this
  // layer's state buffers and the keys are the cache's rows up to the run's last position.
  Tensor attention(const Tensor& x, int64_t layer, const LayerKind& kind, const KvCache* cache) const {
    const Tensor &cos = kind.cos, &sin = kind.sin;
    const std::string b = "blk." + std::to_string(layer) + ".";
    int64_t n = x.dim(0), hd = p.head_dim, H = p.n_head, KV = p.n_head_kv, group = H / KV;
    Tensor q, k, v;
    if (find(b + "attn_qkv.weight")) {  // phi3: q, k and v rows in one tensor
      Tensor qkv = linear(x, b + "attn_qkv", (H + 2 * KV) * hd, p.n_embd);
      auto rows = [&](int64_t from, int64_t count) { return qkv.shrink({{0, n}, {from * hd, (from + count) * hd}}); };
      q = rows(0, H), k = rows(H, KV), v = rows(H + KV, KV);
    } else {
      q = linear(x, b + "attn_q", H * hd, p.n_embd), k = linear(x, b + "attn_k", KV * hd, p.n_embd);
      v = linear(x, b + "attn_v", KV * hd, p.n_embd);
    }
    q = q.reshape({n, H, hd}), k = k.reshape({n, KV, hd});
    if (find(b + "attn_q_norm.weight")) {  // qwen3, gemma3: each head's q and k RMS-normalized before RoPE
      q = rms_norm(q, b + "attn_q_norm.weight");
      k = rms_norm(k, b + "attn_k_norm.weight");
    }
    q = rope(q, cos, sin).permute({1, 0, 2});
    k = rope(k, cos, sin).permute({1, 0, 2});
    v = v.reshape({n, KV, hd}).permute({1, 0, 2});
    if (cache) {  // [KV, rows, hd]: each head's rows contiguous, so a run's write is one run per head
      Shape rows{KV, cache->kv_len, hd};
      auto keep = [&](const char* name, const Tensor& t) {
        Tensor state = Tensor::state(g, name + std::to_string(layer), cache->dtype, rows);
        return state.assign(t.cast(cache->dtype), 1, cache->pos).cast(DType::F32);
      };
      k = keep("cache_k.", k);
      v = keep("cache_v.", v);
    }
    int64_t keys = k.dim(1);
    // Query head h reads kv head h / group.
    auto share = [&](const Tensor& t) {
      return t.reshape({KV, 1, keys, hd}).expand({KV, group, keys, hd}).reshape({H, keys, hd});
    };
    Tensor scores;         // [H, n, keys]
    if (p.attn_scale > 0)  // gemma: the queries scaled, as llama.cpp does it
      scores = (q * double(p.attn_scale)).matmul(share(k).transpose());
    else
      scores = q.matmul(share(k).transpose()) * (1.0 / std::sqrt(double(hd)));
    if (p.attn_softcap > 0) scores = softcap(scores, p.attn_softcap);
    scores = Tensor::where(kind.mask, scores, scores.scalar(-std::numeric_limits<double>::infinity()));
    Tensor out = scores.softmax(-1).matmul(share(v)).permute({1, 0, 2}).reshape({n, H * hd});
    return linear(out, b + "attn_output", p.n_embd, H * hd);
  }

  Tensor ffn(const Tensor& x, int64_t layer) const {
    const std::string b = "blk." + std::to_string(layer) + ".";
    Tensor gate, up;
    if (find(b + "ffn_gate.weight")) {
      gate = linear(x, b + "ffn_gate", p.n_ff, p.n_embd), up = linear(x, b + "ffn_up", p.n_ff, p.n_embd);
      // GPU targets (no int8 path): the gate product a kernel of its own, so that each kernel
      // has one sum per output, which the tensor-core tiles take whole (the up product's kernel
      // then reads the gate); fused, they were one kernel with two sums.
      if (int8_rows <= 0) gate = gate.contiguous();
    } else {  // phi3: gate rows then up rows in ffn_up
      Tensor both = linear(x, b + "ffn_up", 2 * p.n_ff, p.n_embd);
      int64_t n = x.dim(0);
      gate = both.shrink({{0, n}, {0, p.n_ff}}), up = both.shrink({{0, n}, {p.n_ff, 2 * p.n_ff}});
    }
    Tensor act = p.ffn_gelu ? gate.gelu(true) : gate * gate.sigmoid();  // GELU (tanh form) or SiLU
    return linear(act * up, b + "ffn_down", p.n_embd, p.n_ff);
  }
};
}  // namespace

Tensor llama_forward(Graph& g, const GgufFile& f, const LlamaParams& p, const Tensor& tokens, int64_t positions,
                     const KvCache* cache, int64_t int8_rows, const Tensor* logit_positions) {
  Builder b{g, f, p, int8_rows};
  int64_t n = tokens.dim(0);
  check(positions >= n, "llama_forward: tables shorter than the tokens");
  // The tokens' positions from a table cut to n (a run-time count cuts it at run time); the keys'
  // positions: the same without a cache, else the cache's rows 0..kv_len-1.
  Tensor pos = Tensor::arange(g, positions, DType::I32).shrink({{0, n}}), keys = pos;
  if (cache) {
    check(cache->context >= n && cache->kv_len <= cache->context, "llama_forward: cache smaller than the tokens");
    pos = pos + Tensor::index_value(g, cache->pos, DType::I32);  // absolute positions pos0 + i
    keys = Tensor::arange(g, cache->context, DType::I32).shrink({{0, cache->kv_len}});
  }
  // Rope tables over the whole context, their rows gathered by absolute position (without a
  // cache: the first n rows).
  auto tables = [&](double base, double scale, const std::string& name) {
    auto [c, s] = b.rope_tables(cache ? cache->context : positions, base, scale, name);
    if (!cache) return std::pair{c, s};
    return std::pair{c.gather(pos, 0), s.gather(pos, 0)};
  };
  Tensor qpos = pos.reshape({n, 1}), kpos = keys.reshape({1, keys.dim(0)});
  LayerKind global;
  std::tie(global.cos, global.sin) = tables(p.rope_base, p.rope_freq_scale, "rope");
  global.mask = qpos.ge(kpos);  // key j is visible to query i when j <= i
  LayerKind local = global;     // sliding-window layers: also when i - j < n_swa
  if (p.n_swa > 0) {
    local.mask = global.mask.logical_and(kpos.gt(qpos - double(p.n_swa)));
    if (p.rope_base_swa != p.rope_base || p.rope_freq_scale_swa != p.rope_freq_scale)
      std::tie(local.cos, local.sin) = tables(p.rope_base_swa, p.rope_freq_scale_swa, "rope_swa");
  }
  Tensor x = b.weight("token_embd.weight", {p.n_vocab, p.n_embd}).gather(tokens, 0);
  if (p.embd_scale != 1) x = x * double(p.embd_scale);  // gemma: sqrt(n_embd)
  for (int64_t l = 0; l < p.n_layer; ++l) {
    const std::string blk = "blk." + std::to_string(l) + ".";
    // gemma's RMSNorm of each sublayer's output before the residual add
    auto post_norm = [&](const Tensor& t, const std::string& name) {
      return b.find(blk + name) ? b.rms_norm(t, blk + name) : t;
    };
    Tensor h = b.attention(b.rms_norm(x, blk + "attn_norm.weight"), l, p.is_swa(l) ? local : global, cache);
    x = x + post_norm(h, "post_attention_norm.weight");
    x = x + post_norm(b.ffn(b.rms_norm(x, blk + "ffn_norm.weight"), l), "post_ffw_norm.weight");
  }
  if (logit_positions) {  // the rows at those positions, picked by a one-hot sum (no size is fixed)
    int64_t r = logit_positions->dim(0);
    Tensor pick = logit_positions->reshape({r, 1, 1}).eq(pos.reshape({1, n, 1}));
    x = Tensor::where(pick, x.reshape({1, n, p.n_embd}), x.scalar(0)).sum({1});
  }
  x = b.rms_norm(x, "output_norm.weight");
  std::string head = b.find("output.weight") ? "output.weight" : "token_embd.weight";  // tied to the embedding
  Tensor logits = b.project(x, head, p.n_vocab, p.n_embd);
  return p.final_softcap > 0 ? Builder::softcap(logits, p.final_softcap) : logits;
}

}  // namespace tgc
