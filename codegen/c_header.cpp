#include "codegen/c_header.h"

#include <algorithm>
#include <filesystem>

#include "codegen/vocab_view.h"
#include "ir/error.h"

namespace tgc {
namespace {
namespace fs = std::filesystem;

const char* c_type(DType t) {
  switch (t) {
    case DType::F32: return "float";
    case DType::F64: return "double";
    case DType::I64: return "int64_t";
    case DType::I32: return "int32_t";
    case DType::I16: return "int16_t";
    case DType::I8: return "int8_t";
    case DType::U8:
    case DType::Bool: return "uint8_t";
    case DType::U16:
    case DType::F16:
    case DType::BF16: return "uint16_t";
    case DType::U32: return "uint32_t";
    default: return "uint64_t";
  }
}

// An input's or output's shape with its run-time dims (batch, VARs) shown as -1.
}  // namespace

Shape declared_shape(const NamedTensor& t, bool batched, const std::vector<int32_t>& dim_vars) {
  Shape s = t.tensor.shape();
  if (batched) s[0] = -1;
  for (size_t i = 0; i < dim_vars.size(); ++i)
    if (dim_vars[i] != -1) s[i] = -1;  // a run-time dim, or one derived from it
  return s;
}

bool has_llm_api(const Model& m) {
  return !m.kv_length_var.empty() && !m.outputs.empty() && m.outputs[0].tensor.dtype() == DType::F32 &&
         m.outputs[0].tensor.shape().size() == 2;
}

namespace {

// A name from the model file inside the header's block comment: one line of text (printable), and
// a "*/" in it does not end the comment.
std::string in_comment(const std::string& name) {
  std::string s = printable(name);
  for (size_t at = s.find("*/"); at != std::string::npos; at = s.find("*/", at)) s.replace(at, 2, "*\\/");
  return s;
}

// The inputs and outputs, and what each -1 in their shapes stands for.
std::string io_comment(const std::string& n, const Model& m) {
  std::string h;
  auto listing = [&](const std::vector<NamedTensor>& v, const std::vector<bool>& batched,
                     const std::vector<std::vector<int32_t>>& dim_vars) {
    for (size_t i = 0; i < v.size(); ++i)
      h += " *   " + std::to_string(i) + ": '" + in_comment(v[i].name) + "' " + c_type(v[i].tensor.dtype()) +
           shape_str(declared_shape(v[i], at_or(batched, i, false), at_or(dim_vars, i, {}))) + "\n";
  };
  h += "/* Inputs, in order:\n";
  listing(m.inputs, m.batched_inputs, m.input_dim_vars);
  h += " * Outputs, in order:\n";
  listing(m.outputs, m.batched_outputs, m.output_dim_vars);
  if (!m.batch_dim.empty())
    h += " * -1 is the batch size '" + in_comment(m.batch_dim) + "', bound at run time by " + n +
         "_set_input_shape (default 1).\n";
  auto shapes_use = [&](const UOp* v) {
    int32_t slot = int32_t(m.graph->var_slot(v));
    for (const auto* dims : {&m.input_dim_vars, &m.output_dim_vars})
      for (const std::vector<int32_t>& d : *dims)
        if (std::find(d.begin(), d.end(), slot) != d.end()) return true;
    return false;
  };
  for (const UOp* v : m.graph->vars())
    if (v->var().name == m.logit_rows_var)
      h += " * -1 of '" + in_comment(m.outputs[0].name) +
           "' is its row count: the token count of the last eval, or 1 (" + n + "_all_logits).\n";
    else if (m.graph->var_value(v) && !shapes_use(v))  // no -1 is it (an If's condition)
      continue;
    else if (m.graph->var_value(v))
      h += " * -1 is a size the model computes from its inputs' values: '" + in_comment(v->var().name) + "' (0 to " +
           std::to_string(v->var().max) + "); after each run " + n + "_output_shape gives it, and " + n +
           "_output_data the storage of that size (take the pointer again after every run).\n";
    else if (v->var().name != m.kv_length_var) {
      int64_t step = m.graph->var_step(v), max = v->var().max * step;
      h += " * -1 is a run-time dim: '" + in_comment(v->var().name) + "' (" +
           std::to_string(m.graph->var_min(v) * step) + " to " + std::to_string(max) +
           (step > 1 ? " in multiples of " + std::to_string(step) : "") + ", default " + std::to_string(max) +
           "), bound by " + n + "_set_input_shape.\n";
    }
  return h;
}

// What every model has: create, run, its inputs and outputs, the errors.
std::string model_api(const std::string& n, const Model& m) {
  std::string h;
  h += " */\nenum { " + n + "_NUM_INPUTS = " + std::to_string(m.inputs.size()) + ", " + n +
       "_NUM_OUTPUTS = " + std::to_string(m.outputs.size()) + " };\n\n";
  h += "/* Threads: a model object is used by one thread at a time (calls on one object are not\n"
       " * synchronized); different objects, of this model or others, run concurrently on as many\n"
       " * threads as the application likes, each with its own storage and thread pool. The functions\n"
       " * without a model argument may be called from any thread at any time. " +
       n +
       "_last_error()\n"
       " * is per thread: the message of the calling thread's last failure. Results do not depend on\n"
       " * num_threads (the same bits at 1 thread or 8). */\n\n";
  h += "/* num_threads <= 0: one per physical core. Runs use the calling thread and num_threads - 1\n"
       " * workers, each pinned to a CPU of its own where the process may use that many (not with\n"
       " * TGC_PIN_THREADS=0 in the environment): models that run side by side should split the cores\n"
       " * between them rather than each take all. NULL on failure: see " +
       n + "_last_error(). */\n";
  h += n + "_model* " + n + "_create(int num_threads);\n";
  h += "void " + n + "_destroy(" + n + "_model* m);\n";
  h += "/* Runs the model once on the current inputs. 0 on success, -1 on failure. */\n";
  h += "int " + n + "_run(" + n + "_model* m);\n";
  h += "/* Model-owned storage: fill inputs before run, read outputs after. */\n";
  h += "void* " + n + "_input(" + n + "_model* m, int index);\n";
  h += "const void* " + n + "_output(const " + n + "_model* m, int index);\n";
  h += "/* Binds the model's run-time dims (the batch size) from the shape of input `index`, checking the\n"
       " * others; storage of a changed batch size is reallocated (inputs are written after). 0 or -1. */\n";
  h += "int " + n + "_set_input_shape(" + n + "_model* m, int index, int rank, const int64_t* dims);\n";
  h += "/* Shape of input/output `index` as listed above: rank returned, dims written to `dims` (up to 8). */\n";
  h += "int " + n + "_input_shape(int index, int64_t* dims);\n";
  h += "int " + n + "_output_shape(int index, int64_t* dims);\n";
  h += "const char* " + n + "_input_name(int index);\n";
  h += "const char* " + n + "_output_name(int index);\n";
  h += "const char* " + n + "_last_error(void);\n";
  return h;
}

// A KV cache: its length, cut back, reset.
std::string kv_api(const std::string& n, const Model& m) {
  std::string h;
  for (const UOp* v : m.graph->vars())
    if (v->var().name == m.kv_length_var) {
      h += "\n/* KV cache of " + std::to_string(v->var().max) +
           " positions, kept between runs: each run appends its tokens after\n"
           " * the ones held (a prefill of n tokens, then decode steps of one), until it is full. */\n";
      h += "int64_t " + n + "_kv_length(const " + n +
           "_model* m);  /* positions held: where the next run's tokens go */\n";
      h += "int " + n + "_set_kv_length(" + n +
           "_model* m, int64_t n);  /* forget positions n.. (n <= held). 0 or -1 */\n";
      h += "int " + n + "_reset(" + n + "_model* m);  /* an empty cache: a new sequence. 0 or -1 */\n";
    }
  return h;
}

// A language model on the cache: eval, logits, sampling.
std::string llm_api(const std::string& n, const Model& m) {
  std::string h;
  if (has_llm_api(m)) {
    std::string vocab = std::to_string(m.outputs[0].tensor.shape()[1]);
    h += "\n/* A language model on that cache: eval feeds tokens (a prompt, then one token per step), logits\n"
         " * are what follows each token fed, sample draws the next token from the last row. */\n";
    h += "enum { " + n + "_N_VOCAB = " + vocab + " };\n";
    h += "/* Runs tokens[0, n) at the cache's position (n up to n_tokens' bound above: a longer prompt\n"
         " * goes in several evals). 0, or -1 (the cache is full, ...): see " +
         n + "_last_error(). */\n";
    h += "int " + n + "_eval(" + n + "_model* m, const int32_t* tokens, int64_t n);\n";
    h += "/* The last eval's logits, [*n_rows][" + n +
         "_N_VOCAB] (row i follows its token i), valid until the next\n"
         " * eval; last_logits is the last row, the one that predicts the next token. */\n";
    h += "const float* " + n + "_logits(const " + n + "_model* m, int64_t* n_rows);\n";
    h += "const float* " + n + "_last_logits(const " + n + "_model* m);\n";
    if (!m.logit_rows_var.empty())
      h += "/* all = 1 (the default): logits of every token an eval runs; 0: of its last one only (*n_rows = 1),\n"
           " * all that sampling needs, and a prefill then skips the output projection of the others. 0 or -1. */\n"
           "int " +
           n + "_all_logits(" + n + "_model* m, int all);\n";
    h += "/* llama.cpp's sampler chain: top_k, then top_p, then min_p, then temp, then a random draw; temp <= 0 is\n"
         " * greedy (the argmax). top_k <= 0, top_p >= 1 and min_p <= 0 turn their stage off. */\n";
    // laid out as runtime-stub/llm/sample.h's tgc_sampling, which NAME_sample passes it on as
    h += "typedef struct " + n + "_sampling {\n  float temp;\n  int32_t top_k;\n  float top_p;\n  float min_p;\n} " +
         n + "_sampling;\n";
    h += "#define " + n + "_SAMPLING_DEFAULTS {0.8f, 40, 0.95f, 0.05f} /* llama.cpp's */\n";
    h += "/* A token drawn from the last logits row. *rng is the draw's random state: set it to a seed once;\n"
         " * each draw advances it, and the same seed gives the same tokens. -1 on failure. */\n";
    h += "int32_t " + n + "_sample(const " + n + "_model* m, const " + n + "_sampling* p, uint64_t* rng);\n";
  }
  return h;
}

// The model's tokenizer.
std::string tokenizer_api(const std::string& n, const Model& m) {
  std::string h;
  if (m.vocab) {
    tgc_vocab view = vocab_view(*m.vocab);
    h += "\n/* The model's tokenizer (" + std::to_string(m.vocab->n_tokens()) + " tokens, " + tgc_vocab_kind(&view) +
         ", as llama.cpp tokenizes): the ids of\n"
         " * text[0, len), BOS first when add_bos & 1 (the model's default: " +
         std::string(m.vocab->add_bos ? "1" : "0") +
         "), special tokens' texts as those\n"
         " * tokens when add_bos & 2 (chat prompts); up to cap written to out.\n"
         " * Returns how many the text has (more than cap: call again with more room), -1 on failure. */\n";
    h += "int64_t " + n + "_tokenize(" + n +
         "_model* m, const char* text, size_t len, int add_bos, int32_t* out, int64_t cap);\n";
    h += "/* The text of one token (up to cap bytes to out, no terminating 0; control tokens have none). Returns\n"
         " * its length (more than cap: call again with more room), -1 for a token outside the vocabulary. */\n";
    h += "int64_t " + n + "_detokenize(const " + n + "_model* m, int32_t token, char* out, int64_t cap);\n";
    h += "enum { " + n + "_TOKEN_BOS = " + std::to_string(m.vocab->bos) + ", " + n +
         "_TOKEN_EOS = " + std::to_string(m.vocab->eos) + " }; /* -1: none */\n";
    h += "/* A chat message (laid out as llama.cpp's llama_chat_message): role \"system\", \"user\" or \"assistant\". "
         "*/\n";
    h += "typedef struct " + n + "_chat_message {\n  const char* role;\n  const char* content;\n} " + n +
         "_chat_message;\n";
    h += "/* The prompt text of msgs[0, n) in chat template tmpl (NULL: the file's tokenizer.chat_template; or\n"
         " * llama.cpp's name of one: chatml, llama2, llama2-sys, llama2-sys-bos, llama2-sys-strip, mistral-v1,\n"
         " * mistral-v3, mistral-v3-tekken, mistral-v7, mistral-v7-tekken, phi3, phi4, gemma, llama3), as\n"
         " * llama.cpp's llama_chat_apply_template renders it; add_assistant: the assistant's header last. Up\n"
         " * to cap bytes to out (NUL-terminated when there is room); returns the text's length (cap or more:\n"
         " * call again with more room), -1 for no template or one tgc does not render. Tokenize a\n"
         " * conversation's text with add_bos = 2 | the model's default (2: special tokens' texts are those\n"
         " * tokens), a later turn's alone with add_bos = 2. */\n";
    h += "int64_t " + n + "_chat_apply_template(const " + n + "_model* m, const char* tmpl, const " + n +
         "_chat_message* msgs, size_t n, int add_assistant, char* out, int64_t cap);\n";
  }
  return h;
}

}  // namespace

std::string header_text(const std::string& name, const Model& m, const std::string& cpu_note) {
  std::string n = name, guard = name;
  for (char& ch : guard) ch = char(std::toupper(static_cast<unsigned char>(ch)));
  std::string h = "/* " + n + ".h: C API of the model compiled by tgc from " +
                  in_comment(fs::path(m.path).filename().string()) + ". */\n";
  h += "#ifndef " + guard + "_H\n#define " + guard +
       "_H\n#include <stddef.h>\n#include <stdint.h>\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  h += "typedef struct " + n + "_model " + n + "_model;\n\n";
  if (!cpu_note.empty()) h += "/* " + cpu_note + ": on a CPU without one of them, " + n + "_create fails. */\n";
  h += io_comment(n, m) + model_api(n, m) + kv_api(n, m) + llm_api(n, m) + tokenizer_api(n, m);
  h += "\n#ifdef __cplusplus\n}\n#endif\n#endif\n";
  return h;
}

}  // namespace tgc
