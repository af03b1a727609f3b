/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Names Ruby frames from a process's memory: an iseq body (a Ruby method,
 * block, class body or script) gives its label, path, first line, line
 * table and the checksum the eBPF walker computed (bpf/ruby.h); a method
 * entry gives its class's path (through the class's ivar table,
 * "__classpath__") and, for a C function, its name (through the symbol
 * table). Names are built as rb_profile_frame_full_label builds them
 * (vm_backtrace.c): "Shop::Cart#leaf_a", "block in Shop::Cart#run",
 * "Integer#times", "Shop::Cart.build", "<main>", "<class:Cart>". Two
 * differences from stackprof on 3.1, whose rb_profile_frames records a
 * block's frame by its method's entry: a block keeps its "block in " here;
 * and an iseq alone names no class (a method's iseq has no parent_iseq in
 * 3.1, so its class is only known from a frame's method entry:
 * ember_rb_method_class, then ember_rb_iseq_name).
 *
 * Memory comes through a read callback (the process's /proc/PID/mem in the
 * symbolizer, a buffer in tests and fuzzing). Everything read is hostile:
 * each object's type flags must be what Ruby writes (-EBADMSG otherwise),
 * lengths are capped, every index is checked; memory that cannot be read
 * is -EFAULT.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_RUBY_FRAMES_H
#define EMBER_SYMBOLIZER_INTERP_RUBY_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolizer/interp/ruby_layout.h"

#define EMBER_RB_MAX_STRING 4096       /* bytes of a label, path or class path */
#define EMBER_RB_MAX_ISEQ   (1u << 20) /* instructions of one iseq, entries of its line table */
#define EMBER_RB_MAX_SERIAL (1u << 24) /* symbol serials */
#define EMBER_RB_MAX_IVARS  256        /* entries of a class's ivar table looked at */

/* Reads len bytes at addr into buf: 0, or a negative errno. */
typedef int (*ember_rb_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/*
 * What naming needs of one process beyond the layout, kept by the caller
 * for the process's life: the symbol table (for C functions' and ivars'
 * names) and the ids of the three hidden ivars class paths live under.
 * An id left 0 is learnt, the first time a class is named, by reading the
 * names of the class's ivars; the caller may set them from libruby's
 * machine code instead (classname() reads __classpath__'s id from .bss).
 */
struct ember_rb_symbols {
	uint64_t table; /* address of ruby_global_symbols; 0: unknown */
	uint64_t classpath, tmp_classpath, attached;
};

/* The symbols of a process whose table is at table (0: unknown), with the layout's fixed ids. */
void ember_rb_symbols_init(const struct ember_rb_layout *l, uint64_t table,
                           struct ember_rb_symbols *out);

struct ember_rb_iseq {
	uint32_t checksum; /* what the walker computes from the body's window */
	uint32_t type;     /* ISEQ_TYPE_*: 0 top, 1 method, 2 block, 3 class, ... 8 plain */
	uint32_t iseq_size;
	int32_t first_lineno;
	char *name;  /* full label, its method unqualified: "block in run" (ember_rb_iseq_name) */
	char *label; /* "block in run", "leaf_a", "<main>" */
	char *base_label;
	char *method; /* base label of the method the iseq belongs to; NULL outside one */
	char *path;   /* pathobj: the String, or [path, realpath]'s path */
	/* The line table: insns_info's line numbers and its succinct index, as Ruby keeps them. */
	int32_t *lines;
	uint32_t nlines;
	uint8_t *succ; /* struct succ_index_table, succ_len bytes */
	size_t succ_len;
	int lines_error; /* the table could not be read: lines are unknown */
};

/*
 * Reads the iseq body at body. Returns 0, -EFAULT when memory cannot be
 * read, -EBADMSG when it is not an iseq body of this layout (type, size or
 * first line out of range, labels or path not Strings, its local iseq not
 * an iseq). On success out owns memory: ember_rb_iseq_free.
 */
int ember_rb_read_iseq(const struct ember_rb_layout *l, ember_rb_read_fn read, void *ctx,
                       uint64_t body, struct ember_rb_iseq *out);
void ember_rb_iseq_free(struct ember_rb_iseq *is);

/*
 * The line of instruction index pos (what the walker recorded: the pc's
 * index less one when not 0), by Ruby's succinct index (iseq.c,
 * succ_index_lookup). Returns 0 and *line, -ENOENT when the iseq has no
 * line there (no table, pos past the instructions, line 0), -EBADMSG when
 * the index points outside the table.
 */
int ember_rb_iseq_line(const struct ember_rb_iseq *is, uint32_t pos, int32_t *line);

/*
 * The full label of is with its method qualified by class_path (joined by
 * '.' when singleton, else '#'), as stackprof does with the class of the
 * frame's method entry; class_path NULL: unqualified, as is->name. A
 * malloc'd string in *out; 0, -EINVAL (is not read), -ENOMEM.
 */
int ember_rb_iseq_name(const struct ember_rb_iseq *is, const char *class_path, bool singleton,
                       char **out);

struct ember_rb_cfunc {
	uint32_t checksum; /* ember_interp_checksum(def, called_id, owner), as the walker */
	char *name;        /* "Integer#times", "Process.clock_gettime", or "times" unqualified */
	int class_error;   /* why name is unqualified: ember_rb_class_path's error; 0 if not */
};

/*
 * Reads the method entry of a C function at cme: its name from its
 * definition's original id, qualified by its defined class. Returns 0,
 * -EFAULT, -EBADMSG (not a method entry, not a C function), -ENOENT (the
 * id has no name, or no symbol table). Out owns memory: ember_rb_cfunc_free.
 */
int ember_rb_read_cfunc(const struct ember_rb_layout *l, ember_rb_read_fn read, void *ctx,
                        struct ember_rb_symbols *syms, uint64_t cme, struct ember_rb_cfunc *out);
void ember_rb_cfunc_free(struct ember_rb_cfunc *c);

/*
 * The String at value, at most max (<= EMBER_RB_MAX_STRING) bytes, embedded
 * or not, in a malloc'd C string (each NUL byte as U+FFFD). 0, -EFAULT,
 * -EBADMSG (not a String, longer than max), -ENOMEM.
 */
int ember_rb_read_string(const struct ember_rb_layout *l, ember_rb_read_fn read, void *ctx,
                         uint64_t value, size_t max, char **out);

/*
 * The name of symbol id through the symbol table at table (rb_id2str):
 * 0, -EFAULT, -EBADMSG (the table is not one), -ENOENT (no such id).
 */
int ember_rb_id_name(const struct ember_rb_layout *l, ember_rb_read_fn read, void *ctx,
                     uint64_t table, uint64_t id, char **out);

/*
 * The path of class or module klass as rb_profile_frame_classpath gives it:
 * an included module's iclass names the module; a singleton class names
 * the class it is attached to and sets *singleton. 0, -EFAULT, -EBADMSG
 * (not a class), -ENOENT (anonymous, attached to an object, ids unknown).
 */
int ember_rb_class_path(const struct ember_rb_layout *l, ember_rb_read_fn read, void *ctx,
                        struct ember_rb_symbols *syms, uint64_t klass, char **out, bool *singleton);

/*
 * The class path of the method entry at cme (an imemo ment: the frame's
 * ep[-2] for a C function or a method, its local env's for a block), from
 * its defined class, as ember_rb_class_path.
 */
int ember_rb_method_class(const struct ember_rb_layout *l, ember_rb_read_fn read, void *ctx,
                          struct ember_rb_symbols *syms, uint64_t cme, char **out, bool *singleton);

/*
 * The iseq body of the method written in Ruby whose method entry is at cme
 * (a method frame's ep[-2]: what the walker records for it): through its
 * definition (an iseq method's) and iseq. 0, -EFAULT, -EBADMSG (not a
 * method entry, not a Ruby method, not an iseq).
 */
int ember_rb_method_body(const struct ember_rb_layout *l, ember_rb_read_fn read, void *ctx,
                         uint64_t cme, uint64_t *body);

#endif
