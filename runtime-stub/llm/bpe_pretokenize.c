/* The pre-tokenizers' regexes as scanners (bpe_pretokenize.h). A scanner returns the length of its
 * regex's match at pos (0: none) within [pos, end), the current word's end. Two kinds, as llama.cpp
 * runs them:
 * - llama.cpp's own hand-written scanners (gpt2, llama3, qwen2, qwen35 patterns), which match at
 *   every position (a character no alternative takes is a word of its own); mirrored step by step,
 *   since they differ from the regexes in corner cases;
 * - the regexes llama.cpp gives std::regex: leftmost-first alternation, greedy with backtracking.
 *   \s is White_Space, \p{X} the category (llama.cpp matches categories on a text where each
 *   non-ASCII code point stands for its category, and non-ASCII white space for \v); literal
 *   classes test the code point, with non-ASCII white space as \v (U+3000 is in no class). */
#include "llm/bpe_pretokenize.h"

#include <stdlib.h>

#include "llm/tokenizer.h"
#include "llm/unicode_classes.h"

typedef struct {
  const uint32_t* cp;
  const uint8_t* cls;
} text;

typedef size_t (*scanner)(const text* t, size_t pos, size_t end);

static int category(const text* t, size_t i) { return t->cls[i] & TGC_UC_CATEGORY; }
static int is_letter(const text* t, size_t i) { return category(t, i) == TGC_UC_LETTER; }
static int is_number(const text* t, size_t i) { return category(t, i) == TGC_UC_NUMBER; }
static int is_punct(const text* t, size_t i) { return category(t, i) == TGC_UC_PUNCTUATION; }
static int is_space(const text* t, size_t i) { return (t->cls[i] & TGC_UC_WHITESPACE) != 0; }
static int is_newline(uint32_t c) { return c == '\r' || c == '\n'; }
static uint32_t ascii_lower(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* (?i:'s|'t|'re|'ve|'m|'ll|'d) (case-sensitive without fold): its length at pos, or 0. */
static size_t contraction(const text* t, size_t pos, size_t end, int fold) {
  if (t->cp[pos] != '\'' || pos + 1 >= end) return 0;
  uint32_t a = fold ? ascii_lower(t->cp[pos + 1]) : t->cp[pos + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (pos + 2 >= end) return 0;
  uint32_t b = fold ? ascii_lower(t->cp[pos + 2]) : t->cp[pos + 2];
  return (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') ? 3 : 0;
}

/* \s+(?!\S)|\s+ at pos (both scanners end this way): the white space up to the last before a
 * non-space, or all of it at the word's end; 1 (a word of its own) when pos is no space. */
static size_t trailing_spaces(const text* t, size_t pos, size_t end) {
  size_t n = 0;
  while (pos + n < end && is_space(t, pos + n)) ++n;
  if (n > 1 && pos + n < end) return n - 1;
  return n > 0 ? n : 1;
}

/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ (GPT-2), as
 * llama.cpp's unicode_regex_split_custom_gpt2 scans it. */
static size_t scan_gpt2(const text* t, size_t pos, size_t end) {
  size_t n = contraction(t, pos, end, 0);
  if (n) return n;
  size_t first = t->cp[pos] == ' ' ? pos + 1 : pos; /* the optional space */
  if (first < end) {
    int (*same)(const text*, size_t) = is_letter(t, first) ? is_letter : is_number(t, first) ? is_number : NULL;
    size_t p = first;
    if (same) {
      while (p < end && same(t, p)) ++p;
      return p - pos;
    }
    if (!is_space(t, first)) {
      while (p < end && !is_space(t, p) && !is_letter(t, p) && !is_number(t, p)) ++p;
      return p - pos;
    }
  }
  return trailing_spaces(t, pos, end);
}

/* \p{L}, or [\p{L}\p{M}] with marks */
static int is_letter_or(const text* t, size_t i, int marks) {
  return is_letter(t, i) || (marks && category(t, i) == TGC_UC_MARK);
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,D}| ?[^\s\p{L}\p{N}]+[\r\n]*|
 * \s*[\r\n]+|\s+(?!\S)|\s+ : llama3 (D = 3), qwen2 (D = 1); qwen35 is qwen2 with [\p{L}\p{M}] for
 * \p{L}. As llama.cpp's unicode_regex_split_custom_llama3/qwen2/qwen35 scan them. */
static size_t scan_llama3_like(const text* t, size_t pos, size_t end, size_t max_digits, int marks) {
  size_t n = contraction(t, pos, end, 1);
  if (n) return n;
  uint32_t c = t->cp[pos];
  if (!is_newline(c) && !is_number(t, pos) &&
      (is_letter_or(t, pos, marks) || (pos + 1 < end && is_letter_or(t, pos + 1, marks)))) {
    size_t p = pos + 1;
    while (p < end && is_letter_or(t, p, marks)) ++p;
    return p - pos;
  }
  if (is_number(t, pos)) {
    size_t p = pos;
    while (p < end && p - pos < max_digits && is_number(t, p)) ++p;
    return p - pos;
  }
  size_t first = c == ' ' ? pos + 1 : pos;
  if (first >= end || !(is_space(t, first) || is_letter_or(t, first, marks) || is_number(t, first))) {
    size_t p = first;
    while (p < end && !(is_space(t, p) || is_letter_or(t, p, marks) || is_number(t, p))) ++p;
    while (p < end && is_newline(t->cp[p])) ++p;
    return p - pos;
  }
  size_t last_newline_end = 0;
  for (size_t p = pos; p < end && is_space(t, p); ++p)
    if (is_newline(t->cp[p])) last_newline_end = p + 1;
  if (last_newline_end) return last_newline_end - pos; /* \s*[\r\n]+ */
  return trailing_spaces(t, pos, end);
}

static size_t scan_llama3(const text* t, size_t pos, size_t end) { return scan_llama3_like(t, pos, end, 3, 0); }
static size_t scan_qwen2(const text* t, size_t pos, size_t end) { return scan_llama3_like(t, pos, end, 1, 0); }
static size_t scan_qwen35(const text* t, size_t pos, size_t end) { return scan_llama3_like(t, pos, end, 1, 1); }

/* ---- the std::regex ones ---- */

/* A code point as llama.cpp's std::wregex sees it: non-ASCII white space as \v. */
static uint32_t wide(const text* t, size_t i) { return t->cp[i] > 0x7F && is_space(t, i) ? 0x0B : t->cp[i]; }

typedef struct {
  uint32_t lo, hi;
} range;

static int in_ranges(uint32_t c, const range* r, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (c >= r[i].lo && c <= r[i].hi) return 1;
  return 0;
}

/* The run of code points from pos that satisfy in(t, i). */
static size_t run(const text* t, size_t pos, size_t end, int (*in)(const text*, size_t)) {
  size_t p = pos;
  while (p < end && in(t, p)) ++p;
  return p - pos;
}

/* \s?X+ : an optional white space, then a run of X (0 when there is none). */
static size_t space_then_run(const text* t, size_t pos, size_t end, int (*in)(const text*, size_t)) {
  if (is_space(t, pos) && pos + 1 < end && in(t, pos + 1)) return 1 + run(t, pos + 1, end, in);
  return run(t, pos, end, in);
}

static int in_number(const text* t, size_t i) { return is_number(t, i); }

/* \p{N} */
static size_t scan_digit(const text* t, size_t pos, size_t end) { return is_number(t, pos) ? 1 : 0; }
/* \p{N}+ */
static size_t scan_digits(const text* t, size_t pos, size_t end) { return run(t, pos, end, in_number); }
/* [0-9][0-9][0-9] */
static size_t scan_three_digits(const text* t, size_t pos, size_t end) {
  for (size_t i = 0; i < 3; ++i)
    if (pos + i >= end || t->cp[pos + i] < '0' || t->cp[pos + i] > '9') return 0;
  return 3;
}
/* [\r\n] */
static size_t scan_newline(const text* t, size_t pos, size_t end) { return is_newline(t->cp[pos]) ? 1 : 0; }

static int is_ascii_of(const text* t, size_t i, const char* set) {
  for (; *set; ++set)
    if (t->cp[i] == (uint8_t)*set) return 1;
  return 0;
}
static int in_falcon_punct(const text* t, size_t i) { return is_punct(t, i) || is_ascii_of(t, i, "$+<=>^~|`"); }
static int in_default_punct(const text* t, size_t i) { return is_punct(t, i) || is_ascii_of(t, i, "$+<=>^~|"); }
/* [\p{P}\$\+<=>\^~\|`]+ (falcon) and [\p{P}\$\+<=>\^~\|]+ (default) */
static size_t scan_falcon_punct(const text* t, size_t pos, size_t end) { return run(t, pos, end, in_falcon_punct); }
static size_t scan_default_punct(const text* t, size_t pos, size_t end) { return run(t, pos, end, in_default_punct); }

static int in_letter(const text* t, size_t i) { return is_letter(t, i); }
static int in_punct(const text* t, size_t i) { return is_punct(t, i); }
/* \s?\p{L}+ and \s?\p{P}+ (deepseek-coder) */
static size_t scan_space_letters(const text* t, size_t pos, size_t end) {
  return space_then_run(t, pos, end, in_letter);
}
static size_t scan_space_puncts(const text* t, size_t pos, size_t end) { return space_then_run(t, pos, end, in_punct); }

/* [一-龥ࠀ-一가-퟿]+ (deepseek) */
static int in_cjk(const text* t, size_t i) {
  static const range r[] = {{0x4E00, 0x9FA5}, {0x0800, 0x4E00}, {0xAC00, 0xD7FF}};
  return in_ranges(wide(t, i), r, sizeof r / sizeof *r);
}
static size_t scan_cjk(const text* t, size_t pos, size_t end) { return run(t, pos, end, in_cjk); }

/* deepseek-llm's letters: the class of \s?[A-Za-zµÀ-ÖØ-ö...]+ in its tokenizer.json, as ranges. */
static int in_deepseek_letter(const text* t, size_t i) {
  static const range r[] = {
      {0x41, 0x5a},       {0x61, 0x7a},       {0xb5, 0xb5},       {0xc0, 0xd6},       {0xd8, 0xf6},
      {0xf8, 0x1ba},      {0x1bc, 0x1bf},     {0x1c4, 0x293},     {0x295, 0x2af},     {0x370, 0x373},
      {0x376, 0x377},     {0x37b, 0x37d},     {0x37f, 0x37f},     {0x386, 0x386},     {0x388, 0x38a},
      {0x38c, 0x38c},     {0x38e, 0x3a1},     {0x3a3, 0x3f5},     {0x3f7, 0x481},     {0x48a, 0x52f},
      {0x531, 0x556},     {0x10a0, 0x10c5},   {0x13a0, 0x13f5},   {0x13f8, 0x13fd},   {0x1c90, 0x1cba},
      {0x1cbd, 0x1cbf},   {0x1d00, 0x1d2b},   {0x1d6b, 0x1d77},   {0x1d79, 0x1d9a},   {0x1e00, 0x1f15},
      {0x1f18, 0x1f1d},   {0x1f20, 0x1f45},   {0x1f48, 0x1f4d},   {0x1f50, 0x1f57},   {0x1f59, 0x1f59},
      {0x1f5b, 0x1f5b},   {0x1f5d, 0x1f5d},   {0x1f5f, 0x1f7d},   {0x1f80, 0x1fb4},   {0x1fb6, 0x1fbc},
      {0x1fbe, 0x1fbe},   {0x1fc2, 0x1fc4},   {0x1fc6, 0x1fcc},   {0x1fd0, 0x1fd3},   {0x1fd6, 0x1fdb},
      {0x1fe0, 0x1fec},   {0x1ff2, 0x1ff4},   {0x1ff6, 0x1ffc},   {0x2102, 0x2102},   {0x2107, 0x2107},
      {0x210a, 0x2113},   {0x2115, 0x2115},   {0x2119, 0x211d},   {0x2124, 0x2124},   {0x2126, 0x2126},
      {0x2128, 0x2128},   {0x212a, 0x212d},   {0x212f, 0x2134},   {0x2139, 0x2139},   {0x213c, 0x213f},
      {0x2145, 0x2149},   {0x214e, 0x214e},   {0x2183, 0x2184},   {0x2c00, 0x2c7b},   {0x2c7e, 0x2ce4},
      {0x2ceb, 0x2cee},   {0x2cf2, 0x2cf3},   {0xa640, 0xa66d},   {0xa680, 0xa69b},   {0xa722, 0xa76f},
      {0xa771, 0xa787},   {0xa78b, 0xa78e},   {0xab70, 0xabbf},   {0xfb00, 0xfb06},   {0xfb13, 0xfb17},
      {0xff21, 0xff3a},   {0xff41, 0xff5a},   {0x10400, 0x1044f}, {0x104b0, 0x104d3}, {0x104d8, 0x104fb},
      {0x10c80, 0x10cb2}, {0x10cc0, 0x10cf2}, {0x118a0, 0x118df}, {0x1e900, 0x1e943},
  };
  return in_ranges(wide(t, i), r, sizeof r / sizeof *r);
}
/* \s?[!-/:-~！-／：-～‘-‟　-。]+ (deepseek-llm) */
static int in_deepseek_punct(const text* t, size_t i) {
  static const range r[] = {{0x21, 0x2F},     {0x3A, 0x7E},     {0xFF01, 0xFF0F},
                            {0xFF1A, 0xFF5E}, {0x2018, 0x201F}, {0x3000, 0x3002}};
  return in_ranges(wide(t, i), r, sizeof r / sizeof *r);
}
static size_t scan_deepseek_letters(const text* t, size_t pos, size_t end) {
  return space_then_run(t, pos, end, in_deepseek_letter);
}
static size_t scan_deepseek_puncts(const text* t, size_t pos, size_t end) {
  return space_then_run(t, pos, end, in_deepseek_punct);
}

/* \s+$ : white space from pos to the word's end. */
static size_t scan_final_spaces(const text* t, size_t pos, size_t end) {
  size_t n = 0;
  while (pos + n < end && is_space(t, pos + n)) ++n;
  return pos + n == end ? n : 0;
}

/* Each pre-tokenizer's regexes, in order (llama.cpp's llm_tokenizer_bpe). */
static const scanner* const kPreScanners[TGC_PRE_COUNT] = {
    [TGC_PRE_DEFAULT] = (const scanner[]){scan_default_punct, scan_gpt2, scan_digits, scan_three_digits, NULL},
    [TGC_PRE_GPT2] = (const scanner[]){scan_gpt2, NULL},
    [TGC_PRE_LLAMA3] = (const scanner[]){scan_llama3, NULL},
    [TGC_PRE_QWEN2] = (const scanner[]){scan_qwen2, NULL},
    [TGC_PRE_QWEN35] = (const scanner[]){scan_qwen35, NULL},
    [TGC_PRE_STARCODER] = (const scanner[]){scan_digit, scan_gpt2, NULL},
    [TGC_PRE_FALCON] = (const scanner[]){scan_falcon_punct, scan_gpt2, scan_three_digits, NULL},
    [TGC_PRE_DEEPSEEK_LLM] = (const scanner[]){scan_newline, scan_deepseek_letters, scan_deepseek_puncts,
                                               scan_final_spaces, scan_cjk, scan_digits, NULL},
    [TGC_PRE_DEEPSEEK_CODER] =
        (const scanner[]){scan_newline, scan_space_letters, scan_space_puncts, scan_cjk, scan_digit, NULL},
};

int64_t tgc_bpe_pretokenize(int pre, const uint32_t* cp, const uint8_t* cls, int64_t n, int64_t* words) {
  if (n == 0) return 0;
  if (pre < 0 || pre >= TGC_PRE_COUNT) return -1;
  int64_t* next = malloc((size_t)n * sizeof *next);
  if (!next) return -1;
  const text t = {cp, cls};
  int64_t count = 1;
  words[0] = n;
  for (const scanner* s = kPreScanners[pre]; *s; ++s) {
    /* each word so far: its matches (searched leftmost, as std::regex_iterator) and the text between */
    int64_t m = 0;
    size_t begin = 0;
    for (int64_t w = 0; w < count; ++w) {
      size_t end = begin + (size_t)words[w], p = begin;
      while (p < end) {
        size_t q = p, len = 0;
        while (q < end && (len = (*s)(&t, q, end)) == 0) ++q;
        if (q > p) next[m++] = (int64_t)(q - p);
        if (len) next[m++] = (int64_t)len;
        p = q + len;
      }
      begin = end;
    }
    for (int64_t i = 0; i < m; ++i) words[i] = next[i];
    count = m;
  }
  free(next);
  return count;
}
