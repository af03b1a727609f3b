/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reads a pprof profile (profile.proto, gzip-compressed or not) into a
 * profile. The input is untrusted: the decompressed size and the memory the
 * decoder may allocate are capped, and every index and id is checked. A
 * reference to something absent becomes an [unknown] frame and is counted
 * in the statistic "report.bad_references"; it never ends the read.
 *
 * What pprof has no field for is recovered where possible: comments
 * "#name=value" (ember writes its statistics so; "name=value" before) become
 * statistics again, "#host=NAME" the host; frames in a "[kernel...]" mapping or at a kernel
 * address are kernel frames, the others native. The process name comes from
 * the "comm" label, else the first mapping's file name.
 */
#ifndef EMBER_SYMBOLIZER_FORMATS_IN_PPROF_H
#define EMBER_SYMBOLIZER_FORMATS_IN_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "symbolizer/profile/profile.h"

#define EMBER_PPROF_MAX_BYTES   (256u << 20) /* decompressed message */
#define EMBER_PPROF_MAX_DECODED (1ull << 30) /* memory the decoder may allocate */
#define EMBER_PPROF_MAX_DEPTH   4096         /* frames kept per sample */

/* Adds the profile in buf (len bytes) to p, an initialised profile. */
int ember_read_pprof(struct ember_profile *p, const uint8_t *buf, size_t len);

#endif
