// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/record_decode.h"

#include <errno.h>
#include <string.h>

int ember_decode_sample(const void *buf, size_t len, const struct ember_sample_event **sample,
                        const uint64_t **frames)
{
	const struct ember_sample_event *s = buf;

	if (len < sizeof(*s) || ((uintptr_t)buf & 7))
		return -EBADMSG;
	if (s->kind != EMBER_EV_SAMPLE || s->kstack_len > EMBER_MAX_KSTACK ||
	    s->ustack_len > EMBER_MAX_USTACK ||
	    len != sizeof(*s) + 8u * ((size_t)s->kstack_len + s->ustack_len))
		return -EBADMSG;
	*sample = s;
	*frames = (const uint64_t *)(s + 1);
	return 0;
}

int ember_decode_proc_event(const void *buf, size_t len, const struct ember_proc_event **ev)
{
	const struct ember_proc_event *e = buf;

	if (len != sizeof(*e) || ((uintptr_t)buf & 7))
		return -EBADMSG;
	if (e->kind != EMBER_EV_EXEC && e->kind != EMBER_EV_EXIT)
		return -EBADMSG;
	*ev = e;
	return 0;
}

int ember_decode_lost(const void *buf, size_t len, struct ember_rec_lost *out)
{
	if (len != sizeof(*out))
		return -EBADMSG;
	memcpy(out, buf, sizeof(*out));
	if (out->reason < EMBER_LOST_BPF_RINGBUF || out->reason > EMBER_LOST_OTHER)
		return -EBADMSG;
	return 0;
}

const char *ember_lost_reason_name(uint32_t reason)
{
	switch (reason) {
	case EMBER_LOST_BPF_RINGBUF:
		return "bpf_ringbuf_full";
	case EMBER_LOST_SAMPLE_RING:
		return "sample_ring_full";
	case EMBER_LOST_NO_CONSUMER:
		return "no_symbolizer";
	case EMBER_LOST_PROC_EVENTS:
		return "process_events";
	default:
		return "other";
	}
}
