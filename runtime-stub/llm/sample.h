/* Token sampling from one row of logits, as llama.cpp's default sampler chain does it:
 * top-k -> top-p -> min-p -> temperature -> a seeded random draw; greedy (the argmax) when
 * temp <= 0. Used by the executable's -n and by the C API's NAME_sample. C11, no dependencies. */
#ifndef TGC_SAMPLE_H
#define TGC_SAMPLE_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The generated C header declares NAME_sampling with this layout. */
typedef struct tgc_sampling {
  float temp;    /* <= 0: greedy */
  int32_t top_k; /* keep the k most likely tokens; <= 0: off */
  float top_p;   /* then the fewest whose probabilities add up to top_p; >= 1: off */
  float min_p;   /* then those at least min_p times as likely as the most likely; <= 0: off */
} tgc_sampling;

/* llama.cpp's defaults for the stages after greedy's (its --temp default is 0.8; ours is greedy). */
#define TGC_SAMPLING_TOP_K 40
#define TGC_SAMPLING_TOP_P 0.95f
#define TGC_SAMPLING_MIN_P 0.05f

/* The index of the largest of logits[0, n) (the first of equal ones). */
int32_t tgc_argmax(const float* logits, int64_t n);

/* A token drawn from logits[0, n) by the chain above; *rng is the random state (start it at a
 * seed: the same seed and logits give the same tokens), advanced by each draw that is not
 * greedy. Returns the token, or -1 when out of memory. */
int32_t tgc_sample(const float* logits, int64_t n, const tgc_sampling* p, uint64_t* rng);

#ifdef __cplusplus
}
#endif
#endif
