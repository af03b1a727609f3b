/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Decoding of sample-ring payloads (already copied into private memory by
 * the ring). Every length is checked against the record's own size before
 * a field is used.
 */
#ifndef EMBER_SYMBOLIZER_RECORD_DECODE_H
#define EMBER_SYMBOLIZER_RECORD_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "ipc/ring.h"
#include "bpf/records.h"

/* A SAMPLE payload (a CPU or an off-CPU sample): the header, its kstack_len + ustack_len
 * frames and its stack copy. */
int ember_decode_sample(const void *buf, size_t len, const struct ember_sample_event **sample,
                        const uint64_t **frames);
/*
 * The stack copy of a sample ember_decode_sample accepted (its bounds are
 * checked), and in *stack its bytes; NULL when the sample carries none.
 */
const struct ember_stack_copy *ember_sample_stack_copy(const struct ember_sample_event *s,
                                                       const uint8_t **stack);
/* A PROCESS_EXEC (an exec, or a process running at start) or PROCESS_EXIT payload. */
int ember_decode_proc_event(const void *buf, size_t len, const struct ember_proc_event **ev);
/* A LOST payload. */
int ember_decode_lost(const void *buf, size_t len, struct ember_rec_lost *out);
/* A COLLECTOR_MEMORY payload (numbers only: any value is taken as the collector says). */
int ember_decode_sampling(const void *buf, size_t len, struct ember_rec_sampling *out);
int ember_decode_collector_memory(const void *buf, size_t len,
                                  struct ember_rec_collector_memory *out);
/* "bpf_ringbuf", "sample_ring", ... for a lost reason. */
const char *ember_lost_reason_name(uint32_t reason);
/*
 * Why an off-CPU sample's thread waited, from the state it left the CPU in
 * and the system call it was in (this machine's numbers): "preempted",
 * "uninterruptible", "futex", "sleep", "poll", "read", ...
 */
const char *ember_wait_reason(uint32_t wait_state, int32_t syscall);

#endif
