/* A conversation on the KV cache (--chat): each line read is a user turn, rendered by the model's
 * chat template (chat_template.c), and only its new tokens are run: the history stays in the cache.
 * The reply streams to stdout until the template's end-of-turn token or EOS. When the cache cannot
 * hold the next turn and its reply, the oldest turns are dropped: the system message and the most
 * recent turns that fit are rendered again and run from an empty cache (their replies as text). */
#define _GNU_SOURCE /* getline, strdup */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llm/chat_template.h"
#include "llm/llm_internal.h"

/* An assistant reply's stand-in when a turn is rendered after one: what follows it is the end of
 * that reply's turn, which the cache does not hold yet (the reply stopped at its end-of-turn
 * token, or at -n). No template trims it away or puts it in a token's text. */
#define REPLY_MARK "\x01reply\x01"

typedef struct {
  tgc_model* m;
  const tgc_chat_options* o;
  int tmpl;
  tgc_tokenizer* tok;
  int32_t eot;           /* the template's end-of-turn token, or -1 */
  int64_t ctx, max_eval; /* cache rows; tokens one eval takes */
  char** turns;          /* user and assistant texts, alternating, since the last reset or shift */
  size_t n_turns, cap_turns;
  int32_t* ids; /* scratch for a turn's tokens */
  int64_t cap_ids;
  int32_t* held; /* the tokens the cache holds (--tokens-out) */
  size_t n_held, cap_held;
} chat;

static int grow(void** p, size_t* cap, size_t need, size_t size) {
  if (need <= *cap) return 0;
  size_t c = 2 * need + 16;
  void* q = realloc(*p, c * size);
  if (!q) return tgc_set_error("out of memory"), -1;
  *p = q, *cap = c;
  return 0;
}

/* The template's text of msgs (malloc'd), or NULL with the error set. */
static char* render(const chat* c, const tgc_chat_message* msgs, size_t n, int add_assistant) {
  int64_t len = tgc_chat_render(c->tmpl, msgs, n, add_assistant, NULL, 0);
  char* s = len >= 0 ? malloc((size_t)len + 1) : NULL;
  if (!s) return tgc_set_error("out of memory"), NULL;
  tgc_chat_render(c->tmpl, msgs, n, add_assistant, s, len + 1);
  return s;
}

/* The tokens of text into c->ids (special tokens parsed, BOS first with bos). Their count, or -1. */
static int64_t tokens(chat* c, const char* text, int bos) {
  int flags = TGC_TOKENIZE_SPECIAL | (bos && tgc_desc(c->m)->vocab->add_bos ? TGC_TOKENIZE_BOS : 0);
  int64_t n = tgc_tokenize(c->tok, text, strlen(text), flags, c->ids, c->cap_ids);
  if (n > c->cap_ids) {
    size_t cap = (size_t)c->cap_ids;
    if (grow((void**)&c->ids, &cap, (size_t)n, sizeof *c->ids) != 0) return -1;
    c->cap_ids = (int64_t)cap;
    n = tgc_tokenize(c->tok, text, strlen(text), flags, c->ids, c->cap_ids);
  }
  if (n < 0) tgc_set_error("the turn cannot be tokenized (a byte the vocabulary cannot spell, or out of memory)");
  return n;
}

/* The conversation from turn `from` on (the system message first) and a new user turn, as the
 * whole prompt: the prompt of a first turn, or of one after a context shift. */
static char* whole_prompt(const chat* c, size_t from, const char* user) {
  size_t n = 0, k = c->n_turns - from + 2;
  tgc_chat_message* msgs = malloc(k * sizeof *msgs);
  if (!msgs) return tgc_set_error("out of memory"), NULL;
  if (c->o->system) msgs[n++] = (tgc_chat_message){"system", c->o->system};
  for (size_t i = from; i < c->n_turns; ++i) msgs[n++] = (tgc_chat_message){i % 2 ? "assistant" : "user", c->turns[i]};
  msgs[n++] = (tgc_chat_message){"user", user};
  char* s = render(c, msgs, n, 1);
  free(msgs);
  return s;
}

/* A turn after a reply: the end of the reply's turn, then the user's. */
static char* next_prompt(const chat* c, const char* user) {
  tgc_chat_message msgs[3] = {{"user", "x"}, {"assistant", REPLY_MARK}, {"user", user}};
  char *before = render(c, msgs, 2, 0), *after = before ? render(c, msgs, 3, 1) : NULL;
  char* mark = before ? strstr(before, REPLY_MARK) : NULL;
  size_t at = mark ? (size_t)(mark - before) + strlen(REPLY_MARK) : 0;
  int extends = after && mark && strncmp(before, after, at) == 0;
  char* s = extends ? strdup(after + at) : NULL;
  if (after && !extends)
    tgc_set_error("chat template '%s': a turn does not extend the conversation before it", tgc_chat_name(c->tmpl));
  else if (extends && !s)
    tgc_set_error("out of memory");
  free(before);
  free(after);
  return s;
}

static void forget_turns(chat* c, size_t k) { /* the oldest k texts */
  for (size_t i = 0; i < k; ++i) free(c->turns[i]);
  memmove(c->turns, c->turns + k, (c->n_turns - k) * sizeof *c->turns);
  c->n_turns -= k;
}

/* Runs ids[0, n) on the cache, in evals of at most max_eval tokens. 0 or -1. */
static int run(chat* c, const int32_t* ids, int64_t n) {
  if (grow((void**)&c->held, &c->cap_held, c->n_held + (size_t)n, sizeof *c->held) != 0) return -1;
  for (int64_t i = 0; i < n; i += c->max_eval)
    if (tgc_llm_eval(c->m, ids + i, n - i < c->max_eval ? n - i : c->max_eval) != 0) return -1;
  memcpy(c->held + c->n_held, ids, (size_t)n * sizeof *ids);
  c->n_held += (size_t)n;
  return 0;
}

static int clear_cache(chat* c) {
  c->n_held = 0;
  return tgc_set_kv_length(c->m, 0);
}

/* The user turn's tokens run on the cache (after a context shift where they do not fit with room
 * for the reply), *n_run of them. 1 when even the turn alone does not fit (said on stderr), 0, or -1. */
static int prefill(chat* c, const char* user, int64_t room, int64_t* n_run) {
  int first = c->n_turns == 0 && tgc_kv_length(c->m) == 0;
  char* text = first ? whole_prompt(c, 0, user) : next_prompt(c, user);
  int64_t n = text ? tokens(c, text, first) : -1;
  free(text);
  if (n < 0) return -1;
  if (tgc_kv_length(c->m) + n + room > c->ctx) {
    size_t drop = 0; /* whole turns (user and reply) from the oldest on, until the rest fits */
    for (;; drop += 2) {
      text = whole_prompt(c, drop, user);
      n = text ? tokens(c, text, 1) : -1;
      free(text);
      if (n < 0) return -1;
      if (n + room <= c->ctx || drop >= c->n_turns) break;
    }
    if (n + room > c->ctx) {
      fprintf(stderr, "[this turn needs %lld tokens and %lld for the reply; the context holds %lld: not run]\n",
              (long long)n, (long long)room, (long long)c->ctx);
      return 1;
    }
    fprintf(stderr, "[context full: %zu of %zu earlier turns dropped, the rest run again]\n", drop / 2, c->n_turns / 2);
    forget_turns(c, drop);
    if (clear_cache(c) != 0) return -1;
  }
  *n_run = n;
  return run(c, c->ids, n);
}

/* The reply: drawn token by token, streamed, each run on the cache; its text appended to the
 * turns. Stops at EOS, the end-of-turn token, a stop string, -n or a full cache. */
static int reply(chat* c, uint64_t* rng, int64_t* n_out) {
  const tgc_vocab* v = tgc_desc(c->m)->vocab;
  tgc_text_stream out = {stdout, c->o->stops, c->o->n_stops, NULL, 0, 0};
  char* text = calloc(1, 1); /* the reply's text, for a later context shift */
  size_t len = 0, cap = 1;
  int failed = !text, stop = 0;
  for (*n_out = 0; !failed && !stop && (c->o->n_max < 0 || *n_out < c->o->n_max); ++*n_out) {
    int32_t id = tgc_llm_sample(c->m, &c->o->sampling, rng);
    if (id < 0 || id == v->eos || id == c->eot) {
      failed = id < 0;
      break;
    }
    if (tgc_kv_length(c->m) >= c->ctx) {
      fprintf(stderr, "\n[the context is full: the reply ends here]");
      break;
    }
    int64_t n = id < v->n_tokens ? tgc_token_piece(v, id, NULL, 0) : 0; /* its length */
    if (grow((void**)&text, &cap, len + (size_t)n + 1, 1) != 0) {
      failed = 1;
      break;
    }
    tgc_token_piece(v, id, text + len, n);
    stop = tgc_stream_push(&out, text + len, (size_t)n);
    len += (size_t)n, text[len] = 0;
    failed = stop < 0 || run(c, &id, 1) != 0;
  }
  if (failed) {
    if (!text) tgc_set_error("out of memory");
    free(out.held);
    free(text);
    return -1;
  }
  tgc_stream_end(&out);
  fputc('\n', stdout);
  fflush(stdout);
  c->turns[c->n_turns++] = text;
  return 0;
}

int tgc_chat(tgc_model* m, const tgc_chat_options* o, FILE* in) {
  const tgc_model_desc* d = tgc_desc(m);
  int32_t k = tgc_token_input(m, "--chat");
  if (k < 0) return -1;
  const tgc_buffer* b = &d->buffers[d->inputs[k]];
  chat c = {.m = m, .o = o, .eot = -1, .ctx = d->var_max[d->kv_position[0]]};
  c.max_eval = d->var_max[b->dim_vars[0]] * (d->var_step ? d->var_step[b->dim_vars[0]] : 1);
  const char* source = o->template_name ? o->template_name : d->vocab->chat_template;
  const char* other = NULL;
  if (!source)
    return tgc_set_error("--chat: the model file has no tokenizer.chat_template (give --chat-template NAME)"), -1;
  if ((c.tmpl = tgc_chat_detect(source, &other)) < 0 && o->template_name)
    return tgc_set_error(
               "--chat-template %s: not a template tgc renders (chatml, llama2, llama2-sys, llama2-sys-bos, "
               "llama2-sys-strip, mistral-v1, mistral-v3, mistral-v3-tekken, mistral-v7, mistral-v7-tekken, "
               "phi3, phi4, gemma, llama3)",
               o->template_name),
           -1;
  if (c.tmpl < 0) {
    if (other)
      return tgc_set_error("--chat: chat template '%s' (as llama.cpp names it) is not one tgc renders", other), -1;
    return tgc_set_error("--chat: the chat template is not one tgc recognises (%.40s%s)", source,
                         strlen(source) > 40 ? "..." : ""),
           -1;
  }
  if (!(c.tok = tgc_tokenizer_create(d->vocab))) return tgc_set_error("out of memory for the tokenizer"), -1;
  const char* eot = tgc_chat_end_of_turn(c.tmpl);
  if (tokens(&c, eot, 0) == 1 && d->vocab->types[c.ids[0]] != TGC_TOKEN_NORMAL) c.eot = c.ids[0]; /* a special token */
  uint64_t rng = o->seed;
  int64_t room = o->n_max >= 0 ? o->n_max : c.ctx / 4; /* kept free for each reply */
  int tty = isatty(fileno(in)), rc = 0;
  char* line = NULL;
  size_t line_cap = 0;
  if (tty)
    fprintf(stderr, "[chat template %s; /reset clears the conversation, Ctrl-D ends it]\n", tgc_chat_name(c.tmpl));
  for (;;) {
    if (tty) fputs("> ", stdout), fflush(stdout);
    ssize_t n = getline(&line, &line_cap, in);
    if (n < 0) {
      if (tty) fputc('\n', stdout); /* the shell's prompt on a line of its own */
      break;
    }
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
    if (strcmp(line, "/reset") == 0) {
      forget_turns(&c, c.n_turns);
      if (clear_cache(&c) != 0) {
        rc = -1;
        break;
      }
      if (tty) fprintf(stderr, "[conversation cleared]\n");
      continue;
    }
    if (n == 0) continue;
    size_t cap = c.cap_turns;
    if (grow((void**)&c.turns, &cap, c.n_turns + 2, sizeof *c.turns) != 0) {
      rc = -1;
      break;
    }
    c.cap_turns = cap;
    double t0 = tgc_now_ms();
    int64_t n_prompt = 0, n_reply = 0;
    int r = prefill(&c, line, room, &n_prompt);
    if (r == 1) continue;
    char* user = r == 0 ? strdup(line) : NULL;
    if (!user) {
      if (r == 0) tgc_set_error("out of memory");
      rc = -1;
      break;
    }
    c.turns[c.n_turns++] = user;
    double t1 = tgc_now_ms();
    if (reply(&c, &rng, &n_reply) != 0) {
      rc = -1;
      break;
    }
    double t2 = tgc_now_ms();
    fprintf(stderr, "[prompt %lld tokens in %.0f ms; reply %lld tokens at %.1f tok/s; cache %lld of %lld]\n",
            (long long)n_prompt, t1 - t0, (long long)n_reply, n_reply ? 1000.0 * (double)n_reply / (t2 - t1) : 0.0,
            (long long)tgc_kv_length(m), (long long)c.ctx);
  }
  free(line);
  int64_t n_held = (int64_t)c.n_held;
  if (rc == 0 && o->tokens_out &&
      tgc_npy_write(o->tokens_out, TGC_I32, 1, &n_held, c.held, c.n_held * sizeof *c.held) != 0)
    rc = -1;
  free(c.held);
  forget_turns(&c, c.n_turns);
  free(c.turns);
  free(c.ids);
  tgc_tokenizer_destroy(c.tok);
  return rc;
}
