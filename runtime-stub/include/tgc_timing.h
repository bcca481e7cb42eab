/* What tgc-agent needs of a model beyond tgc_runtime.h to time tuning candidates: the device's
 * name and the launches' own device time. Not for applications. */
#ifndef TGC_TIMING_H
#define TGC_TIMING_H
#include "tgc_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The device a model runs on ("NVIDIA H200"); "" where there is none to name (CPU). */
const char* tgc_device_name(const tgc_model* m);
/* Before the first run: have the backend time each run's launches on the device. */
void tgc_time_launches(tgc_model* m);
/* The device time of the last run's launches, from the first one's start to the last one's end,
 * in ms; -1 where the backend cannot measure it (CPU) or tgc_time_launches was not called. */
double tgc_launch_ms(const tgc_model* m);

#ifdef __cplusplus
}
#endif
#endif
