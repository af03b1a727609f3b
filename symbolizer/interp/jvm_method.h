/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A Java method as a running HotSpot VM holds it (a Method, its
 * ConstMethod, the ConstantPool and class they point at, the Symbols for
 * names), read from the VM's memory with the offsets of jvm_layout.h: the
 * class ("java.util.HashMap", '/' made '.'), the method's name and
 * signature, the class's source file and the method's compressed line
 * table (jvm_lines.h), copied so that the line of any bytecode index can
 * be found later without reading the process again.
 *
 * The memory is hostile: every pointer is read once and checked where it
 * leads (a constant pool index below the pool's length, a symbol no longer
 * than 65535 bytes, a line table inside its ConstMethod), names are cut at
 * bytes a name cannot hold.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_JVM_METHOD_H
#define EMBER_SYMBOLIZER_INTERP_JVM_METHOD_H

#include <stddef.h>
#include <stdint.h>

#include "symbolizer/interp/jvm_layout.h"

#define EMBER_JVM_MAX_LINE_TABLE (256u << 10) /* bytes of a line table copied */

struct ember_jvm_method {
	char *klass;           /* "java.util.HashMap" */
	char *name;            /* "get" */
	char *signature;       /* "(Ljava/lang/Object;)Ljava/lang/Object;" */
	char *file;            /* "HashMap.java"; NULL when the class names none */
	uint64_t const_method; /* what the walker's cookie is made of */
	uint32_t code_size;    /* bytes of bytecode: a bci at or past it has no line */
	uint8_t *lines;        /* the compressed line table; NULL: none */
	size_t lines_len;
};

/* Reads the Method at method: 0; -EFAULT (memory that cannot be read), -EBADMSG (what it
 * holds cannot be a method), -ENOMEM. */
int ember_jvm_method_read(const struct ember_jvm_vm *vm, ember_jvm_read_fn read, void *ctx,
                          uint64_t method, struct ember_jvm_method *out);

/* The line of bytecode index bci: 0 and *line, or -ENOENT. */
int ember_jvm_method_line(const struct ember_jvm_vm *vm, const struct ember_jvm_method *m,
                          uint32_t bci, int32_t *line);

/*
 * The parameter types of a method descriptor, as Java writes them: "(I[JLjava/lang/String;)V"
 * gives "(int, long[], java.lang.String)". Returns 0; -EBADMSG for what is not a descriptor
 * (a type it does not know, a class name without its ';', more than 255 dimensions, nothing
 * after the parameters); -ENAMETOOLONG when out (size bytes) cannot hold it.
 */
int ember_jvm_signature_params(const char *descriptor, char *out, size_t size);

void ember_jvm_method_free(struct ember_jvm_method *m);

#endif
