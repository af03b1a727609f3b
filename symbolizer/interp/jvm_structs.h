/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HotSpot's description of itself: the tables libjvm exports for its
 * serviceability agent (gHotSpotVMStructs: a field's offset in a class or a
 * static's address; gHotSpotVMTypes: a class's size), read from a running
 * JVM's memory and matched against the (type, field) pairs a reader asks
 * for. The entries' own layout (stride, where the name pointers and values
 * are in an entry) is in libjvm's gHotSpotVM*Entry* variables, which the
 * JVM sets while it starts: until then the tables cannot be read (-EAGAIN).
 *
 * Everything read is hostile: the variables, the entries, the names they
 * point at. Strides, entry counts and name lengths are capped; an entry
 * whose names cannot be read is skipped; a pair listed twice keeps its
 * first value.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_JVM_STRUCTS_H
#define EMBER_SYMBOLIZER_INTERP_JVM_STRUCTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EMBER_JVM_MAX_ENTRIES (1u << 14) /* entries of one table (JDK 17: about 2,700) */
#define EMBER_JVM_MAX_STRIDE  256u       /* bytes of one entry (JDK 17: 48 and 40) */
#define EMBER_JVM_MAX_NAME    96u        /* bytes of a type or field name, NUL included */
#define EMBER_JVM_NONE        UINT64_MAX /* an entry field a table does not have */

typedef int (*ember_jvm_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* Where one table's entries are and where, inside an entry, its fields are. */
struct ember_jvm_table {
	uint64_t base;        /* the first entry; the table ends at an entry without a type name */
	uint64_t stride;      /* bytes from one entry to the next */
	uint64_t type_name;   /* const char *: the class ("CodeBlob") or the constant's name */
	uint64_t field_name;  /* const char *: the field ("_frame_size"); NONE in other tables */
	uint64_t value;       /* the field's offset, the class's size or the constant's value */
	uint64_t address;     /* void *: a static field's address (structs); NONE in other tables */
	uint32_t value_width; /* bytes of the value: 8, or 4 (an int constant, sign-extended) */
};

/* The addresses, in the process, of the variables libjvm exports about one table:
 * gHotSpotVMStructs and gHotSpotVMStructEntry{ArrayStride, TypeNameOffset,
 * FieldNameOffset, OffsetOffset, AddressOffset}; gHotSpotVMTypes and
 * gHotSpotVMTypeEntry{ArrayStride, TypeNameOffset, SizeOffset}; gHotSpotVMIntConstants and
 * gHotSpotVMIntConstantEntry{ArrayStride, NameOffset, ValueOffset}. 0: the table has no
 * such field. */
struct ember_jvm_table_vars {
	uint64_t base, stride, type_name, field_name, value, address;
};

/* A pair asked for: field NULL asks for the type's size (the types table). */
struct ember_jvm_want {
	const char *type, *field;
};

/* What a table said of a pair asked for. */
struct ember_jvm_found {
	uint64_t value; /* the offset or size; a static's address when is_address */
	bool found;
	bool is_address;
};

/* Reads the variables at vars into the description of their table, whose values are
 * value_width bytes wide: 0; -EAGAIN while the JVM has not set them yet (a stride or a
 * base of 0); -EFAULT; -EBADMSG for a layout no table can have (a stride past the cap, a
 * field outside its entry). */
int ember_jvm_table_locate(const struct ember_jvm_table_vars *vars, uint32_t value_width,
                           ember_jvm_read_fn read, void *ctx, struct ember_jvm_table *out);

/* Reads table t and fills found[i] for each of the n pairs in want (found[i].found false for
 * those it does not list): 0; -EFAULT when the entries cannot be read; -E2BIG when the
 * table does not end within EMBER_JVM_MAX_ENTRIES; -ENOMEM. */
int ember_jvm_table_read(const struct ember_jvm_table *t, ember_jvm_read_fn read, void *ctx,
                         const struct ember_jvm_want *want, size_t n,
                         struct ember_jvm_found *found);

#endif
