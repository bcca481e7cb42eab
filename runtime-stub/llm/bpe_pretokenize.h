/* BPE pre-tokenizers: a piece of text split into words by the regexes of its tokenizer.ggml.pre,
 * as llama.cpp splits (src/unicode.cpp, unicode_regex_split): each regex in turn splits every word
 * so far into its matches and the text between them. The regexes are hand-written scanners over
 * code points and their Unicode classes (unicode_classes.h). */
#ifndef TGC_BPE_PRETOKENIZE_H
#define TGC_BPE_PRETOKENIZE_H
#include <stdint.h>

/* Splits the code points cp[0, n) (of classes cls[0, n)) into the words of pre-tokenizer pre (enum
 * tgc_bpe_pre): writes each word's length in code points to words (room for n) and returns the
 * number of words, or -1 when out of memory. */
int64_t tgc_bpe_pretokenize(int pre, const uint32_t* cp, const uint8_t* cls, int64_t n, int64_t* words);

#endif
