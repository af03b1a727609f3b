/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The frame tree behind flame graphs, `ember top` and `ember diff`: every
 * distinct call path of a profile is one node, with the samples that passed
 * through it. Node 0 is "all"; its children are the processes; below them
 * the frames, outermost first, inlined functions as frames of their own.
 *
 * A tree can hold two profiles at once (slot 0 the profile shown, slot 1 a
 * base it is compared with): a differential flame graph is the shape of
 * slot 0 coloured by how each node's share changed from slot 1.
 *
 * The tree has its own string table, so profiles that were read from
 * different files (each with its own strings) can be merged into one tree.
 */
#ifndef EMBER_SYMBOLIZER_PROFILE_FLAME_TREE_H
#define EMBER_SYMBOLIZER_PROFILE_FLAME_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolizer/profile/profile.h"

/* Kinds of tree entries beyond the frame kinds of profile.h. */
#define EMBER_FLAME_KIND_PROCESS ((uint8_t)EMBER_FRAME_KIND_MAX)
#define EMBER_FLAME_KIND_ALL     ((uint8_t)(EMBER_FRAME_KIND_MAX + 1))
#define EMBER_FLAME_NKINDS       (EMBER_FRAME_KIND_MAX + 2)

#define EMBER_FLAME_SLOTS 2
#define EMBER_FLAME_NEW   0 /* the profile shown */
#define EMBER_FLAME_BASE  1 /* what it is compared with (diff) */

/* What a frame is: the node's label. Nodes of the same function share one. */
struct ember_flame_func {
	uint32_t name; /* tree string */
	uint32_t file; /* tree string: source file, or 0 */
	uint32_t line; /* the function's first line, else the first line seen; 0 unknown */
	uint8_t kind;  /* enum ember_frame_kind, or EMBER_FLAME_KIND_* */
	uint8_t reserved[3];
};

struct ember_flame_node {
	uint32_t func;
	uint32_t parent;                    /* EMBER_NONE for the root */
	uint32_t first_child, next_sibling; /* EMBER_NONE when absent */
	uint32_t depth;                     /* 0 for "all" */
	uint32_t reserved;
	uint64_t total[EMBER_FLAME_SLOTS]; /* samples in this node and below */
	uint64_t self[EMBER_FLAME_SLOTS];  /* samples whose leaf is this node */
};

struct ember_flame {
	struct ember_hash_key hash_key;
	struct ember_strset strings;
	struct ember_vec funcs; /* struct ember_flame_func */
	struct ember_index func_index;
	struct ember_vec nodes; /* struct ember_flame_node */
	struct ember_index node_index;
	uint32_t max_depth;
	/* Totals of each slot, and whether processes are told apart by pid. */
	uint64_t slot_total[EMBER_FLAME_SLOTS];
	bool by_pid;
};

/*
 * by_pid: one process root per (name, pid); otherwise one per name, which is
 * what a comparison of two recordings (different pids) needs.
 */
int ember_flame_init(struct ember_flame *t, bool by_pid);
void ember_flame_free(struct ember_flame *t);

/*
 * Adds every sample of p to the given slot, valued as the view says (CPU
 * samples, or nanoseconds): ember_flame_add_profile uses the profile's view.
 * The "samples" of the nodes and totals are those values.
 */
int ember_flame_add_profile(struct ember_flame *t, const struct ember_profile *p, int slot);
int ember_flame_add_profile_view(struct ember_flame *t, const struct ember_profile *p, int slot,
                                 enum ember_view view);

/*
 * Computes self counts and orders every node's children by name, so that a
 * walk along first_child/next_sibling is a stable preorder. Call once, after
 * the last ember_flame_add_profile.
 */
int ember_flame_finish(struct ember_flame *t);

const char *ember_flame_str(const struct ember_flame *t, uint32_t id);
size_t ember_flame_nstrings(const struct ember_flame *t);

static inline const struct ember_flame_node *ember_flame_node(const struct ember_flame *t,
                                                              uint32_t i)
{
	return EMBER_VEC_AT(t->nodes, const struct ember_flame_node, i);
}
static inline const struct ember_flame_func *ember_flame_func(const struct ember_flame *t,
                                                              uint32_t i)
{
	return EMBER_VEC_AT(t->funcs, const struct ember_flame_func, i);
}

/* "kernel", "native", "go", "cpython", "unknown", "process", "all". */
const char *ember_flame_kind_name(uint8_t kind);

#endif
