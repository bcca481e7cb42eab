/* The generated text's stream (runtime-stub/llm/text_stream.c): whole UTF-8 characters only, a tail
 * that may become a stop string waits, the first stop string ends the text unprinted.
 * usage: gguf_text_stream   (exit 0 when every check passes) */
#define _POSIX_C_SOURCE 200809L /* fmemopen */
#include <stdio.h>
#include <string.h>

#include "llm/llm_internal.h"

static int g_fail;

/* Pushes pieces[] (NULL-terminated) through a stream with stops[]; checks what was printed after
 * each push (printed[i]), the push that reported the stop (-1: none) and the text at the end. */
static void check(const char* what, const char* const* stops, int n_stops, const char* const* pieces,
                  const char* const* printed, int stop_at, const char* at_end) {
  char out[256] = "";
  FILE* f = fmemopen(out, sizeof out, "w");
  tgc_text_stream s = {f, stops, n_stops, NULL, 0, 0};
  int ok = 1, stopped = -1;
  for (int i = 0; pieces[i] && stopped < 0; ++i) {
    if (tgc_stream_push(&s, pieces[i], strlen(pieces[i])) == 1) stopped = i;
    fflush(f);
    ok &= strcmp(out, printed[i]) == 0;
  }
  tgc_stream_end(&s); /* after a stop string: nothing left to print */
  fclose(f);
  ok &= stopped == stop_at && strcmp(out, at_end) == 0;
  if (!ok) g_fail = 1;
  printf("%s %s (printed '%s')\n", ok ? "ok  " : "FAIL", what, out);
}

#define LIST(...) \
  (const char* const[]) { __VA_ARGS__ }

int main(void) {
  check("no stop strings: everything at once", NULL, 0, LIST("Hello", " world", NULL), LIST("Hello", "Hello world"), -1,
        "Hello world");
  check("a character cut by byte tokens waits for its bytes", NULL, 0,
        LIST("a\xe2", "\x96",
             "\x81"
             "b",
             NULL),
        LIST("a", "a",
             "a\xe2\x96\x81"
             "b"),
        -1,
        "a\xe2\x96\x81"
        "b");
  check("a stop string across tokens: its start waits, then nothing of it is printed", LIST("\n\n"), 1,
        LIST("Hello\n", "\nWorld", NULL), LIST("Hello", "Hello"), 1, "Hello");
  check("a tail that turns out no stop string is printed with the next token", LIST("bcd"), 1,
        LIST("ab", "c", "x", NULL), LIST("a", "a", "abcx"), -1, "abcx");
  check("what waits is printed at the end", LIST("bcd"), 1, LIST("ab", "c", NULL), LIST("a", "a"), -1, "abc");
  check("a stop string inside one token", LIST("STOP"), 1, LIST("xxSTOPyy", NULL), LIST("xx"), 0, "xx");
  check("of two stop strings, the first in the text", LIST("yy", "ST"), 2, LIST("xxSTOPyy", NULL), LIST("xx"), 0, "xx");
  return g_fail;
}
