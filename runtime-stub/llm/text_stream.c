/* Generated text on its way to a FILE (-n): printed as it comes, but only whole UTF-8 characters
 * (a character cut by a byte token waits for its other bytes) and, with stop strings, only text
 * that can no longer become part of one: a tail that is the start of a stop string waits until
 * the next token shows whether it completes it. The first stop string ends the text, and neither
 * it nor what follows it is printed. */
#define _GNU_SOURCE /* memmem */
#include <stdlib.h>
#include <string.h>

#include "llm/llm_internal.h"

/* The bytes of buf[0, n) that form whole UTF-8 characters (a character cut at the end waits). */
static size_t whole_utf8(const char* buf, size_t n) {
  size_t i = n;
  while (i > 0 && n - i < 3 && ((unsigned char)buf[i - 1] & 0xC0) == 0x80) --i; /* up to 3 continuation bytes */
  if (i == 0) return n;
  unsigned char lead = (unsigned char)buf[i - 1];
  size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  return n - (i - 1) >= want ? n : i - 1;
}

/* The longest tail of buf[0, n) that is the start of (but not all of) stop. */
static size_t stop_prefix_tail(const char* buf, size_t n, const char* stop) {
  size_t len = strlen(stop);
  for (size_t t = len - 1 < n ? len - 1 : n; t > 0; --t)
    if (memcmp(buf + n - t, stop, t) == 0) return t;
  return 0;
}

static void emit(tgc_text_stream* s, size_t n) {
  fwrite(s->held, 1, n, s->out);
  fflush(s->out);
  memmove(s->held, s->held + n, s->n - n);
  s->n -= n;
}

int tgc_stream_push(tgc_text_stream* s, const char* bytes, size_t n) {
  if (s->n + n > s->cap) {
    size_t cap = 2 * (s->n + n) + 64;
    char* grown = realloc(s->held, cap);
    if (!grown) return tgc_set_error("out of memory for the generated text"), -1;
    s->held = grown, s->cap = cap;
  }
  memcpy(s->held + s->n, bytes, n);
  s->n += n;
  /* What is held has no whole stop string before this push: the first one found is new. */
  const char* first = NULL;
  for (int32_t k = 0; k < s->n_stops; ++k) {
    const char* at = memmem(s->held, s->n, s->stops[k], strlen(s->stops[k]));
    if (at && (!first || at < first)) first = at;
  }
  if (first) {
    s->n = (size_t)(first - s->held);
    emit(s, s->n);
    return 1;
  }
  size_t wait = 0;
  for (int32_t k = 0; k < s->n_stops; ++k) {
    size_t t = stop_prefix_tail(s->held, s->n, s->stops[k]);
    if (t > wait) wait = t;
  }
  emit(s, whole_utf8(s->held, s->n - wait));
  return 0;
}

void tgc_stream_end(tgc_text_stream* s) {
  emit(s, s->n);
  free(s->held);
  s->held = NULL, s->n = s->cap = 0;
}
