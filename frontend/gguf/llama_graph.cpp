#include "frontend/gguf/llama_graph.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "frontend/gguf/gguf_weights.h"
#include "frontend/gguf/int8_matmul.h"
#include "ir/error.h"

namespace tgc {

LlamaParams llama_params(const GgufFile& f) {
  LlamaParams p;
  p.arch = f.get_string("general.architecture");
  if (p.arch != "llama" && p.arch != "qwen2" && p.arch != "qwen3" && p.arch != "phi3")
    throw Error(f.path() + ": architecture '" + p.arch +
                "' is not supported (tgc builds llama, qwen2, qwen3 and phi3)");
  const std::string a = p.arch + ".";
  auto positive = [&](const std::string& key, int64_t v) {
    if (v <= 0 || v > (int64_t(1) << 32))
      throw Error(f.path() + ": metadata '" + key + "' = " + std::to_string(v) + " is out of range");
    return v;
  };
  p.n_embd = positive(a + "embedding_length", f.get_int(a + "embedding_length"));
  p.n_ff = positive(a + "feed_forward_length", f.get_int(a + "feed_forward_length"));
  p.n_layer = positive(a + "block_count", f.get_int(a + "block_count"));
  p.n_head = positive(a + "attention.head_count", f.get_int(a + "attention.head_count"));
  p.n_head_kv = positive(a + "attention.head_count_kv", f.get_int(a + "attention.head_count_kv", p.n_head));
  p.n_ctx_train = positive(a + "context_length", f.get_int(a + "context_length", 4096));
  if (p.n_embd % p.n_head != 0 || p.n_head % p.n_head_kv != 0)
    throw Error(f.path() + ": " + std::to_string(p.n_head) + " heads of " + std::to_string(p.n_head_kv) +
                " kv heads do not divide embedding length " + std::to_string(p.n_embd));
  p.head_dim = positive(a + "attention.key_length", f.get_int(a + "attention.key_length", p.n_embd / p.n_head));
  if (f.get_int(a + "attention.value_length", p.head_dim) != p.head_dim)
    throw Error(f.path() + ": attention.value_length differs from key_length; tgc builds equal head sizes only");
  p.rms_eps = f.get_float(a + "attention.layer_norm_rms_epsilon", 1e-5);
  p.n_rot = positive(a + "rope.dimension_count", f.get_int(a + "rope.dimension_count", p.head_dim));
  if (p.n_rot > p.head_dim || p.n_rot % 2)
    throw Error(f.path() + ": rope.dimension_count " + std::to_string(p.n_rot) + " does not fit the head size");
  p.rope_base = f.get_float(a + "rope.freq_base", 10000.0);
  p.rope_neox = p.arch != "llama";
  if (f.find_tensor("blk.0.rope_factors_long.weight") || f.find_tensor("blk.0.rope_factors_short.weight"))
    throw Error(f.path() + ": rope scaling 'longrope' (rope_factors_long/short tensors) is not supported");
  if (const GgufValue* st = f.find(a + "rope.scaling.type")) {
    std::string type = st->type == GgufValueType::String ? st->s : "?";
    if (type == "linear")
      p.rope_freq_scale = 1.0 / f.get_float(a + "rope.scaling.factor", 1.0);
    else if (type != "none")
      throw Error(f.path() + ": rope scaling '" + type +
                  "' is not supported (none, linear and llama3's rope_freqs are)");
  }
  if (const GgufValue* sc = f.find(a + "rope.scale_linear")) p.rope_freq_scale = 1.0 / sc->as_double();
  if (const GgufTensorInfo* t = f.find_tensor("rope_freqs.weight")) {  // llama3-style per-frequency factors
    if (t->type != GgmlType::F32 || t->numel() != p.n_rot / 2)
      throw Error(f.path() + ": rope_freqs.weight must be f32 with " + std::to_string(p.n_rot / 2) + " values");
    auto b = f.tensor_bytes(*t);
    p.rope_freq_factors.resize(size_t(p.n_rot / 2));
    std::memcpy(p.rope_freq_factors.data(), b->data(), b->size());
  }
  const GgufTensorInfo* emb = f.find_tensor("token_embd.weight");
  if (!emb || emb->dims.size() != 2 || emb->dims[0] != p.n_embd)
    throw Error(f.path() + ": token_embd.weight is missing or not [" + std::to_string(p.n_embd) + ", n_vocab]");
  p.n_vocab = emb->dims[1];
  return p;
}

namespace {
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

  // RMSNorm over x's last axis (the embedding; qwen3's q and k: each head's values).
  Tensor rms_norm(const Tensor& x, const std::string& name) const {
    Tensor ms = (x * x).mean({-1}, true);
    return x * (ms + p.rms_eps).rsqrt() * weight(name, {x.dim(-1)});
  }

  // cos and sin of position * theta_i as llama.cpp's rope cache computes them (f32 steps), for
  // `positions` positions, laid out as the rotated elements pair up ([positions, n_rot] each):
  // pair i's two elements both read cos_i, and -sin_i and sin_i.
  std::pair<Tensor, Tensor> rope_tables(int64_t positions) const {
    int64_t half = p.n_rot / 2;
    HostTensor c(DType::F32, {positions, p.n_rot}), s(DType::F32, {positions, p.n_rot});
    const float theta_scale = std::pow(float(p.rope_base), -2.0f / float(p.n_rot));
    for (int64_t pos = 0; pos < positions; ++pos) {
      float theta = float(pos);
      for (int64_t i = 0; i < half; ++i) {
        float ff = p.rope_freq_factors.empty() ? 1.0f : p.rope_freq_factors[size_t(i)];
        float t = float(p.rope_freq_scale) * (theta / ff);
        for (int64_t k = 0; k < 2; ++k) {  // NeoX pairs element i with i + half, llama 2i with 2i+1
          int64_t at = pos * p.n_rot + (p.rope_neox ? i + k * half : 2 * i + k);
          c.set(at, std::cos(t));
          s.set(at, k ? std::sin(t) : -std::sin(t));
        }
        theta *= theta_scale;
      }
    }
    return {Tensor::weight(g, "rope_cos", std::move(c)), Tensor::weight(g, "rope_sin", std::move(s))};
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

  // causal [n, keys]: which keys each query sees. With a cache, k and v are written into this
  // layer's state buffers and the keys are the cache's rows up to the run's last position.
  Tensor attention(const Tensor& x, int64_t layer, const Tensor& cos, const Tensor& sin, const Tensor& causal,
                   const KvCache* cache) const {
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
    if (find(b + "attn_q_norm.weight")) {  // qwen3: each head's q and k RMS-normalized before RoPE
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
    Tensor scores = q.matmul(share(k).transpose()) * (1.0 / std::sqrt(double(hd)));  // [H, n, keys]
    scores = Tensor::where(causal, scores, scores.scalar(-std::numeric_limits<double>::infinity()));
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
    return linear(gate * gate.sigmoid() * up, b + "ffn_down", p.n_embd, p.n_ff);
  }
};
}  // namespace

Tensor llama_forward(Graph& g, const GgufFile& f, const LlamaParams& p, const Tensor& tokens, int64_t positions,
                     const KvCache* cache, int64_t int8_rows, const Tensor* logit_positions) {
  Builder b{g, f, p, int8_rows};
  int64_t n = tokens.dim(0);
  check(positions >= n, "llama_forward: tables shorter than the tokens");
  Tensor cos, sin, causal;
  // The tokens' positions from a table cut to n (a run-time count cuts it at run time).
  Tensor pos = Tensor::arange(g, positions, DType::I32).shrink({{0, n}});
  if (!cache) {
    std::tie(cos, sin) = b.rope_tables(positions);
    // Key j is visible to query i when j <= i.
    causal = pos.reshape({n, 1}).ge(pos.reshape({1, n}));
  } else {
    check(cache->context >= n && cache->kv_len <= cache->context, "llama_forward: cache smaller than the tokens");
    // Absolute positions pos0 + i; the rope rows gathered from tables over the whole context;
    // key j (a cache row) is visible to query i when j <= pos0 + i.
    pos = pos + Tensor::index_value(g, cache->pos, DType::I32);
    auto [cos_all, sin_all] = b.rope_tables(cache->context);
    cos = cos_all.gather(pos, 0), sin = sin_all.gather(pos, 0);
    Tensor keys = Tensor::arange(g, cache->context, DType::I32).shrink({{0, cache->kv_len}});
    causal = pos.reshape({n, 1}).ge(keys.reshape({1, cache->kv_len}));
  }
  Tensor x = b.weight("token_embd.weight", {p.n_vocab, p.n_embd}).gather(tokens, 0);
  for (int64_t l = 0; l < p.n_layer; ++l) {
    const std::string blk = "blk." + std::to_string(l) + ".";
    x = x + b.attention(b.rms_norm(x, blk + "attn_norm.weight"), l, cos, sin, causal, cache);
    x = x + b.ffn(b.rms_norm(x, blk + "ffn_norm.weight"), l);
  }
  if (logit_positions) {  // the rows at those positions, picked by a one-hot sum (no size is fixed)
    int64_t r = logit_positions->dim(0);
    Tensor pick = logit_positions->reshape({r, 1, 1}).eq(pos.reshape({1, n, 1}));
    x = Tensor::where(pick, x.reshape({1, n, p.n_embd}), x.scalar(0)).sum({1});
  }
  x = b.rms_norm(x, "output_norm.weight");
  std::string head = b.find("output.weight") ? "output.weight" : "token_embd.weight";  // tied to the embedding
  return b.project(x, head, p.n_vocab, p.n_embd);
}

}  // namespace tgc
