/*
 * usage.h: the resources a process has used, read in one place: peak
 * resident memory and CPU times, of this process or of its waited-for
 * children (getrusage), and the peak of this program image alone
 * (/proc/self/status VmHWM). The two peaks differ after exec: ru_maxrss
 * keeps the largest the process was before it, VmHWM starts again, which
 * is what a task started by a larger parent must report as its own.
 */
#ifndef SSTPIPE_COMMON_USAGE_H
#define SSTPIPE_COMMON_USAGE_H

#include <stdint.h>

typedef enum sp_usage_who {
    SP_USAGE_SELF,     /* this process, every thread of it */
    SP_USAGE_CHILDREN, /* its children that have ended and been waited for */
} sp_usage_who;

typedef struct sp_usage {
    uint64_t peak_rss_bytes; /* self: this process's; children: the largest child's */
    double user_seconds, system_seconds;
} sp_usage;

/* Fills u; 0, or -1 (u zeroed) when getrusage fails. */
int sp_usage_get(sp_usage_who who, sp_usage *u);

/* This program image's peak resident memory in bytes (VmHWM); 0 when
 * /proc cannot say. */
uint64_t sp_usage_image_peak_rss(void);

#endif
