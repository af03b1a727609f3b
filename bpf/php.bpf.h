/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * The PHP frame walker, behind the interpreters' dispatch (interp.bpf.h) in
 * the user-stack unwinder (unwind.bpf.h, x86-64). For a process with a row
 * in php_procs, every call of the interpreter loop (execute_ex) first gets
 * the PHP frames it runs, innermost first, one per step of the unwinder's
 * loop; then the native frame is recorded and native unwinding goes on.
 *
 * One call of execute_ex runs a whole chain of PHP frames: a user function
 * called from PHP code runs in the same call of the loop (the VM enters it
 * without recursion), only one called from C (zend_call_function: a
 * callback of array_map, a destructor) starts a new call, and its frame
 * says so by ZEND_CALL_TOP in its call info. So the walk records frames from
 * the engine's current one until a user frame with that flag, and the next
 * call of the loop resumes above it. An internal (C) function called from
 * PHP has a frame of its own in the chain, of the call of the loop that
 * called it: its name comes after its native frames, as the loop's frames
 * do. Per frame: the execute_data, the function, and user code's line from
 * its current opline. A frame that cannot be read ends the PHP part with a
 * marker; native unwinding goes on.
 */
#ifndef EMBER_BPF_PHP_BPF_H
#define EMBER_BPF_PHP_BPF_H

#include "php.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EMBER_INTERP_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct ember_php_proc);
} php_procs SEC(".maps");

/* The walker's part of the sample's scratch: the row and the windows. */
struct php_scratch {
	struct ember_php_proc row;
	__u8 ex[EMBER_PHP_WINDOW];
	__u8 fn[EMBER_PHP_WINDOW];
};

_Static_assert(sizeof(struct php_scratch) <= EMBER_INTERP_SCRATCH_BYTES, "fits the scratch");

static __always_inline struct php_scratch *php_scratch(struct sample_scratch *s)
{
	return (struct php_scratch *)s->interp;
}

/* Fields of the walker\'s windows, and reads into them (interp.bpf.h): bounded, 0 past. */
#define php_u64(win, off)        interp_win_u64(win, EMBER_PHP_WINDOW, off)
#define php_u32(win, off)        interp_win_u32(win, EMBER_PHP_WINDOW, off)
#define php_read(win, len, addr) interp_win_read(win, EMBER_PHP_WINDOW, len, addr)

/* The engine's current call frame; 0 without one. */
static __always_inline __u64 php_first_frame(const struct ember_php_proc *p)
{
	__u64 ex = 0;

	if (bpf_probe_read_user(&ex, sizeof(ex), (const void *)p->current_ex))
		return 0;
	return ex;
}

/* The line of user code's current opline (in fn's window); 0 when it is not one of fn's. */
static __always_inline __u32 php_line(struct php_scratch *ps)
{
	const struct ember_php_proc *p = &ps->row;
	__u64 opline = php_u64(ps->ex, p->ex_opline), opcodes = php_u64(ps->fn, p->fn_opcodes);
	__u32 line = 0;

	if (opline < opcodes ||
	    opline - opcodes >= (__u64)php_u32(ps->fn, p->fn_last) * p->op_size ||
	    bpf_probe_read_user(&line, sizeof(line), (const void *)(opline + p->op_lineno)))
		return 0;
	return line;
}

/* A file name's identity: its zend_string's address and the hash of its text (h), which
 * the engine computes when it interns the name (0 when it cannot be read). */
static __always_inline __u64 php_file_id(const struct ember_php_proc *p, __u64 name)
{
	__u64 h = 0;

	if (name)
		bpf_probe_read_user(&h, sizeof(h), (const void *)(name + p->str_hash));
	return name ^ h;
}

/* Records the call frame at the cursor, or passes it; returns 0 to go on. */
static __always_inline long php_step(struct ember_uw_state *st, struct sample_scratch *s)
{
	struct php_scratch *ps = php_scratch(s);
	const struct ember_php_proc *p = &ps->row;
	__u64 func, w0, w1, prev;
	__u32 type, info;

	if (php_read(ps->ex, p->ex_read, s->interp_walk.cursor))
		return interp_stop(st, s, EMBER_INTERP_MARK_UNREADABLE);
	func = php_u64(ps->ex, p->ex_func);
	info = php_u32(ps->ex, p->ex_call_info);
	prev = php_u64(ps->ex, p->ex_prev);
	s->interp_walk.cursor = prev;
	/* A frame without a function (a dummy frame of a call from C) is not shown. */
	if (!func)
		return 0;
	if (php_read(ps->fn, p->fn_read, func))
		return interp_stop(st, s, EMBER_INTERP_MARK_UNREADABLE);
	type = ps->fn[p->fn_type % EMBER_PHP_WINDOW];
	w0 = (__u64)(type & 0xff) << EMBER_PHP_ADDR_BITS | func;
	if (type == EMBER_PHP_FUNC_INTERNAL)
		w1 =
		    ember_interp_checksum(php_u64(ps->fn, p->fn_name), php_u64(ps->fn, p->fn_scope),
		                          php_u64(ps->fn, p->fn_handler));
	else
		w1 = (__u64)php_line(ps) << 32 |
		     ember_interp_checksum(php_u64(ps->fn, p->fn_opcodes),
		                           php_file_id(p, php_u64(ps->fn, p->fn_filename)),
		                           php_u64(ps->fn, p->fn_lines));
	if (!interp_frame(st, s, w0, w1))
		return interp_stop(st, s, EMBER_INTERP_MARK_TRUNCATED);
	/* This call of the loop started with this frame: the next call resumes above it. */
	if (!(type & 1) && (info & EMBER_PHP_CALL_TOP))
		s->interp_walk.pending = 0;
	return 0;
}

/* The walker's side of the dispatch (enum interp_op). */
static __always_inline __u64 php_walker(enum interp_op op, struct ember_uw_state *st,
                                        struct sample_scratch *s, __u64 pc)
{
	struct php_scratch *ps = php_scratch(s);
	const struct ember_php_proc *row;

	switch (op) {
	case INTERP_LOAD:
		row = bpf_map_lookup_elem(&php_procs, &st->tgid);
		if (row)
			__builtin_memcpy(&ps->row, row, sizeof(*row));
		return row != NULL;
	case INTERP_IN_LOOP:
		return pc >= ps->row.loop_start && pc < ps->row.loop_end;
	case INTERP_FIRST:
		return php_first_frame(&ps->row);
	case INTERP_STEP:
		return php_step(st, s);
	case INTERP_UNWIND: /* its code has tables */
		return (__u64)-1;
	}
	return 0;
}

#endif
