// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/record_decode.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>

int ember_decode_sample(const void *buf, size_t len, const struct ember_sample_event **sample,
                        const uint64_t **frames)
{
	const struct ember_sample_event *s = buf;

	if (len < sizeof(*s) || ((uintptr_t)buf & 7))
		return -EBADMSG;
	if ((s->kind != EMBER_EV_SAMPLE && (s->kind != EMBER_EV_OFF_CPU || !s->off_cpu_ns)) ||
	    len != ember_sample_size(s, len))
		return -EBADMSG;
	*sample = s;
	*frames = (const uint64_t *)(s + 1);
	return 0;
}

const struct ember_stack_copy *ember_sample_stack_copy(const struct ember_sample_event *s,
                                                       const uint8_t **stack)
{
	const struct ember_stack_copy *c;

	if (!(s->stack_flags & EMBER_STACK_COPY))
		return NULL;
	c = (const struct ember_stack_copy *)((const uint64_t *)(s + 1) + s->kstack_len +
	                                      s->ustack_len);
	*stack = (const uint8_t *)(c + 1);
	return c;
}

int ember_decode_proc_event(const void *buf, size_t len, const struct ember_proc_event **ev)
{
	const struct ember_proc_event *e = buf;

	if (len != sizeof(*e) || ((uintptr_t)buf & 7))
		return -EBADMSG;
	if (e->kind != EMBER_EV_EXEC && e->kind != EMBER_EV_EXIT && e->kind != EMBER_EV_RUNNING &&
	    e->kind != EMBER_EV_MMAP)
		return -EBADMSG;
	*ev = e;
	return 0;
}

int ember_decode_lost(const void *buf, size_t len, struct ember_rec_lost *out)
{
	if (len != sizeof(*out))
		return -EBADMSG;
	memcpy(out, buf, sizeof(*out));
	if (out->reason < EMBER_LOST_BPF_RINGBUF || out->reason > EMBER_LOST_OFF_CPU_SAMPLED)
		return -EBADMSG;
	return 0;
}

int ember_decode_collector_memory(const void *buf, size_t len,
                                  struct ember_rec_collector_memory *out)
{
	if (len != sizeof(*out))
		return -EBADMSG;
	memcpy(out, buf, sizeof(*out));
	return 0;
}

int ember_decode_sampling(const void *buf, size_t len, struct ember_rec_sampling *out)
{
	if (len != sizeof(*out))
		return -EBADMSG;
	memcpy(out, buf, sizeof(*out));
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
	case EMBER_LOST_OFF_CPU_SHORT:
		return "below_min";
	case EMBER_LOST_OFF_CPU_SAMPLED:
		return "sampled_out";
	default:
		return "other";
	}
}

/* include/linux/sched.h */
#define TASK_UNINTERRUPTIBLE   0x0002
#define TASK_STOPPED_OR_TRACED 0x000c
#define TASK_NOLOAD            0x0400

static const char *syscall_wait_reason(int32_t nr)
{
	switch (nr) {
	case SYS_futex:
#ifdef SYS_futex_waitv
	case SYS_futex_waitv:
#endif
		return "futex";
#ifdef SYS_nanosleep
	case SYS_nanosleep:
#endif
	case SYS_clock_nanosleep:
		return "sleep";
#ifdef SYS_poll
	case SYS_poll:
#endif
#ifdef SYS_select
	case SYS_select:
#endif
#ifdef SYS_epoll_wait
	case SYS_epoll_wait:
#endif
	case SYS_ppoll:
	case SYS_pselect6:
	case SYS_epoll_pwait:
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
		return "poll";
	case SYS_read:
	case SYS_readv:
	case SYS_pread64:
	case SYS_preadv:
	case SYS_recvfrom:
	case SYS_recvmsg:
	case SYS_recvmmsg:
		return "read";
	case SYS_write:
	case SYS_writev:
	case SYS_pwrite64:
	case SYS_sendto:
	case SYS_sendmsg:
		return "write";
	case SYS_accept:
	case SYS_accept4:
	case SYS_connect:
		return "connect";
	case SYS_wait4:
	case SYS_waitid:
		return "wait";
#ifdef SYS_pause
	case SYS_pause:
#endif
	case SYS_rt_sigsuspend:
	case SYS_rt_sigtimedwait:
		return "signal";
	case SYS_io_getevents:
	case SYS_io_uring_enter:
		return "aio";
	case SYS_flock:
	case SYS_fcntl:
		return "file lock";
	case SYS_msgrcv:
	case SYS_semtimedop:
#ifdef SYS_semop
	case SYS_semop:
#endif
	case SYS_mq_timedreceive:
		return "ipc";
	case SYS_sched_yield:
		return "yield";
	default:
		return nr < 0 ? "interruptible" : "syscall";
	}
}

const char *ember_wait_reason(uint32_t wait_state, int32_t syscall)
{
	uint32_t state = wait_state & EMBER_WAIT_STATE_MASK;

	if (wait_state & EMBER_WAIT_PREEMPTED)
		return "preempted";
	if (state & TASK_UNINTERRUPTIBLE)
		return state & TASK_NOLOAD ? "idle" : "uninterruptible";
	if (state & TASK_STOPPED_OR_TRACED)
		return "stopped";
	/* Runnable when it left (sched_yield, or woken while it went): it waited for a CPU. */
	if (!state)
		return syscall == SYS_sched_yield ? "yield" : "runnable";
	return syscall_wait_reason(syscall);
}
