// Text features: TfIdfVectorizer over integer token ids. For each n-gram length and skip
// distance, every window of a row is compared with all pool n-grams of that length at once (an
// [N, positions, M] equality mask), and the matches are summed over the positions; a constant
// one-hot matrix then moves the per-n-gram counts to their output columns.
#include <algorithm>

#include "frontend/onnx/onnx_ops.h"

namespace tgc {

namespace {
// [1, 1, M] constant: token j of each of the M n-grams of length n that start at pool[start].
Tensor pool_column(Graph& g, const std::vector<int64_t>& pool, int64_t start, int64_t n, int64_t m, int64_t j) {
  HostTensor h(DType::I64, {1, 1, m});
  for (int64_t k = 0; k < m; ++k) h.set(k, double(pool[size_t(start + k * n + j)]));
  return Tensor::weight(g, "tfidf_pool", std::move(h));
}

// Occurrences in each row of x ([N, C] i64) of the M n-grams of length n at pool[start], with
// the n tokens `d` apart, for d = 1 .. max_skip + 1 (unigrams once): [N, M] f32.
Tensor count_ngrams(Graph& g, const Tensor& x, const std::vector<int64_t>& pool, int64_t start, int64_t n, int64_t m,
                    int64_t max_skip) {
  int64_t N = x.dim(0), C = x.dim(1);
  Tensor total = Tensor::full(g, {N, m}, 0, DType::F32);
  for (int64_t d = 1; d <= (n == 1 ? 1 : max_skip + 1); ++d) {
    int64_t positions = C - (n - 1) * d;
    if (positions <= 0) break;
    Tensor match;
    for (int64_t j = 0; j < n; ++j) {
      Tensor tokens = x.slice({j * d}, {j * d + positions}, {1}, {1}).reshape({N, positions, 1});
      Tensor eq = tokens.eq(pool_column(g, pool, start, n, m, j));
      match = j == 0 ? eq : match.logical_and(eq);
    }
    total = total + match.cast(DType::F32).sum({1});
  }
  return total;
}

Tensor tfidf_vectorizer(Ctx& c) {
  const Tensor& in = c.in(0);
  if (!c.attr_strings("pool_strings").empty()) c.fail("pool_strings: string tensors are not supported");
  if (in.dtype() != DType::I32 && in.dtype() != DType::I64)
    c.fail("input must be int32 or int64 token ids, got " + std::string(dtype_name(in.dtype())));
  if (in.ndim() != 1 && in.ndim() != 2) c.fail("input must be [C] or [N, C], got " + shape_str(in.shape()));
  int64_t min_n = c.attr_int("min_gram_length", 0), max_n = c.attr_int("max_gram_length", 0);
  int64_t max_skip = c.attr_int("max_skip_count", 0);
  std::string mode = c.attr_string("mode", "");
  std::vector<int64_t> starts = c.attr_ints("ngram_counts"), indexes = c.attr_ints("ngram_indexes");
  std::vector<int64_t> pool = c.attr_ints("pool_int64s");
  std::vector<double> weights = c.has_attr("weights") ? c.attr_floats("weights") : std::vector<double>{};
  if (min_n < 1 || max_n < min_n) c.fail("need 1 <= min_gram_length <= max_gram_length");
  if (max_skip < 0) c.fail("max_skip_count must be >= 0");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") c.fail("mode must be TF, IDF or TFIDF, got '" + mode + "'");

  // ngram_counts[n-1] is where the n-grams of length n start in the pool.
  int64_t L = int64_t(starts.size()), K = 0;
  std::vector<int64_t> per_length(static_cast<size_t>(L));
  for (int64_t n = 1; n <= L; ++n) {
    int64_t b = starts[size_t(n - 1)], e = n < L ? starts[size_t(n)] : int64_t(pool.size());
    if (b < 0 || e < b || e > int64_t(pool.size()) || (e - b) % n != 0)
      c.fail("ngram_counts does not split pool_int64s into whole n-grams of length " + std::to_string(n));
    per_length[size_t(n - 1)] = (e - b) / n;
    K += (e - b) / n;
  }
  if (int64_t(indexes.size()) != K)
    c.fail("ngram_indexes has " + std::to_string(indexes.size()) + " entries for " + std::to_string(K) + " n-grams");
  if (K == 0) c.fail("the pool holds no n-grams");
  if (!weights.empty() && int64_t(weights.size()) != K)
    c.fail("weights has " + std::to_string(weights.size()) + " entries for " + std::to_string(K) + " n-grams");
  int64_t outputs = *std::max_element(indexes.begin(), indexes.end()) + 1;
  if (*std::min_element(indexes.begin(), indexes.end()) < 0) c.fail("ngram_indexes must be >= 0");

  Tensor x = (in.ndim() == 1 ? in.reshape({1, in.dim(0)}) : in).cast(DType::I64);
  int64_t N = x.dim(0);
  std::vector<Tensor> counts;  // [N, M] per length, in pool order
  for (int64_t n = 1; n <= L; ++n) {
    int64_t m = per_length[size_t(n - 1)];
    if (m == 0) continue;
    if (n < min_n || n > max_n)
      counts.push_back(Tensor::full(c.g, {N, m}, 0, DType::F32));
    else
      counts.push_back(count_ngrams(c.g, x, pool, starts[size_t(n - 1)], n, m, max_skip));
  }
  Tensor tf = counts.size() == 1 ? counts[0] : Tensor::cat(counts, 1);  // [N, K]
  // IDF and TFIDF weigh each pool n-gram (ONNX's spec; onnxruntime agrees).
  if (mode != "TF") {
    HostTensor w(DType::F32, {1, K});
    for (int64_t k = 0; k < K; ++k) w.set(k, weights.empty() ? 1.0 : weights[size_t(k)]);
    Tensor seen = tf.gt(tf.scalar(0)).cast(DType::F32);
    tf = (mode == "IDF" ? seen : tf) * Tensor::weight(c.g, "tfidf_weights", std::move(w));
  }
  HostTensor onehot(DType::F32, {K, outputs});
  for (int64_t k = 0; k < K; ++k) onehot.set(k * outputs + indexes[size_t(k)], 1);
  Tensor y = tf.matmul(Tensor::weight(c.g, "tfidf_columns", std::move(onehot)));  // [N, outputs]
  return in.ndim() == 1 ? y.reshape({outputs}) : y;
}
}  // namespace

void add_text_ops(OpTable& t) {
  t["TfIdfVectorizer"] = [](Ctx& c) -> Outs { return {tfidf_vectorizer(c)}; };
}

}  // namespace tgc
