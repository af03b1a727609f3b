// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/jvm_method.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "shared/bytes.h"
#include "symbolizer/interp/jvm_lines.h"

#define WINDOW         256u /* bytes of a ConstMethod or ConstantPool header read */
#define HAS_LINE_TABLE 0x1u /* ConstMethod's flags, JDK 17 to 25 */

static int read_window(ember_jvm_read_fn read, void *ctx, uint64_t addr, uint8_t *win,
                       uint64_t size)
{
	if (!addr || addr >= EMBER_JVM_USER_LIMIT || size > WINDOW ||
	    read(ctx, addr, win, (size_t)size))
		return -EFAULT;
	return 0;
}

static uint64_t field(const uint8_t *win, uint64_t size, uint64_t off, unsigned int width)
{
	return ember_le_in(win, (size_t)size, off, width);
}

/* The Symbol at sym as a string: bytes a name cannot hold (control bytes) become '?'. */
static int read_symbol(const struct ember_jvm_vm *vm, ember_jvm_read_fn read, void *ctx,
                       uint64_t sym, char **out)
{
	uint8_t len_bytes[2];
	uint64_t len;
	char *s;

	*out = NULL;
	if (!sym || sym >= EMBER_JVM_USER_LIMIT || read(ctx, sym + vm->symbol_length, len_bytes, 2))
		return -EFAULT;
	len = ember_le_in(len_bytes, 2, 0, 2);
	s = malloc(len + 1);
	if (!s)
		return -ENOMEM;
	if (len && read(ctx, sym + vm->symbol_body, s, (size_t)len)) {
		free(s);
		return -EFAULT;
	}
	for (uint64_t i = 0; i < len; i++)
		if ((uint8_t)s[i] < 0x20 || s[i] == 0x7f)
			s[i] = '?';
	s[len] = '\0';
	*out = s;
	return 0;
}

/* The Symbol in constant pool slot index (a pool of length slots at cp). */
static int pool_symbol(const struct ember_jvm_vm *vm, ember_jvm_read_fn read, void *ctx,
                       uint64_t cp, uint64_t length, uint64_t index, char **out)
{
	uint8_t slot[8];

	*out = NULL;
	if (!index || index >= length)
		return -EBADMSG;
	if (read(ctx, cp + vm->cp_size_of + 8 * index, slot, sizeof(slot)))
		return -EFAULT;
	/* A resolved slot's low bit is a tag (HotSpot's Symbol pointers are aligned). */
	return read_symbol(vm, read, ctx, ember_le_in(slot, 8, 0, 8) & ~1ull, out);
}

/* The line table after the bytecodes, within the ConstMethod's size_words words. */
static int read_lines(const struct ember_jvm_vm *vm, ember_jvm_read_fn read, void *ctx, uint64_t cm,
                      uint64_t size_words, struct ember_jvm_method *out)
{
	uint64_t start = vm->cm_size_of + out->code_size, end = size_words * 8, len;
	uint8_t *table;

	if (end <= start || end > start + EMBER_JVM_MAX_LINE_TABLE)
		return -EBADMSG;
	len = end - start;
	table = malloc(len);
	if (!table)
		return -ENOMEM;
	if (read(ctx, cm + start, table, (size_t)len)) {
		free(table);
		return -EFAULT;
	}
	out->lines_len = ember_jvm_lines_len(table, (size_t)len, vm->unsigned5_x);
	if (!out->lines_len) {
		free(table);
		return -EBADMSG;
	}
	out->lines = table;
	return 0;
}

static int read_method(const struct ember_jvm_vm *vm, ember_jvm_read_fn read, void *ctx,
                       uint64_t method, struct ember_jvm_method *out)
{
	uint8_t m[8], cmw[WINDOW], cpw[WINDOW];
	uint64_t cm, cp, holder, length, klass_name;
	int err;

	if (!method || method >= EMBER_JVM_USER_LIMIT ||
	    read(ctx, method + vm->method_const_method, m, 8))
		return -EFAULT;
	cm = out->const_method = ember_le_in(m, 8, 0, 8);
	err = read_window(read, ctx, cm, cmw, vm->cm_size_of);
	if (err)
		return err;
	cp = field(cmw, vm->cm_size_of, vm->cm_constants, 8);
	out->code_size = (uint32_t)field(cmw, vm->cm_size_of, vm->cm_code_size, 2);
	err = read_window(read, ctx, cp, cpw, vm->cp_size_of);
	if (err)
		return err;
	holder = field(cpw, vm->cp_size_of, vm->cp_pool_holder, 8);
	length = field(cpw, vm->cp_size_of, vm->cp_length, 4);
	if (length > 65536)
		return -EBADMSG;
	err = pool_symbol(vm, read, ctx, cp, length,
	                  field(cmw, vm->cm_size_of, vm->cm_name_index, 2), &out->name);
	if (!err)
		err = pool_symbol(vm, read, ctx, cp, length,
		                  field(cmw, vm->cm_size_of, vm->cm_signature_index, 2),
		                  &out->signature);
	if (!err &&
	    (!holder || holder >= EMBER_JVM_USER_LIMIT || read(ctx, holder + vm->klass_name, m, 8)))
		err = -EFAULT;
	klass_name = ember_le_in(m, 8, 0, 8);
	if (!err)
		err = read_symbol(vm, read, ctx, klass_name, &out->klass);
	if (err)
		return err;
	for (char *c = out->klass; *c; c++)
		if (*c == '/')
			*c = '.';
	/* A class compiled without a source file name, or a table that cannot be read, leaves
	 * the method named. */
	if (pool_symbol(vm, read, ctx, cp, length,
	                field(cpw, vm->cp_size_of, vm->cp_source_file_name_index, 2),
	                &out->file) == -ENOMEM)
		return -ENOMEM;
	if (field(cmw, vm->cm_size_of, vm->cm_flags, 2) & HAS_LINE_TABLE)
		err = read_lines(vm, read, ctx, cm,
		                 field(cmw, vm->cm_size_of, vm->cm_const_method_size, 4), out);
	return err == -ENOMEM ? err : 0;
}

int ember_jvm_method_read(const struct ember_jvm_vm *vm, ember_jvm_read_fn read, void *ctx,
                          uint64_t method, struct ember_jvm_method *out)
{
	int err;

	memset(out, 0, sizeof(*out));
	if (vm->cm_size_of > WINDOW || vm->cp_size_of > WINDOW)
		return -EINVAL;
	err = read_method(vm, read, ctx, method, out);
	if (err)
		ember_jvm_method_free(out);
	return err;
}

int ember_jvm_method_line(const struct ember_jvm_vm *vm, const struct ember_jvm_method *m,
                          uint32_t bci, int32_t *line)
{
	if (!m->lines || bci >= m->code_size)
		return -ENOENT;
	return ember_jvm_line_of(m->lines, m->lines_len, vm->unsigned5_x, bci, line) == 0 ? 0
	                                                                                  : -ENOENT;
}

/* Appends the len bytes at s to out (at *n of size). */
static int put(char *out, size_t size, size_t *n, const char *s, size_t len)
{
	if (len >= size - *n)
		return -ENAMETOOLONG;
	memcpy(out + *n, s, len);
	*n += len;
	out[*n] = '\0';
	return 0;
}

int ember_jvm_signature_params(const char *d, char *out, size_t size)
{
	static const char *const prim[26] = {['B' - 'A'] = "byte",   ['C' - 'A'] = "char",
	                                     ['D' - 'A'] = "double", ['F' - 'A'] = "float",
	                                     ['I' - 'A'] = "int",    ['J' - 'A'] = "long",
	                                     ['S' - 'A'] = "short",  ['Z' - 'A'] = "boolean"};
	size_t n = 0;
	int err = 0;

	if (!size)
		return -ENAMETOOLONG;
	out[0] = '\0';
	if (*d++ != '(')
		return -EBADMSG;
	err = put(out, size, &n, "(", 1);
	for (bool first = true; !err && *d != ')'; first = false) {
		unsigned int dims = 0;

		while (*d == '[' && dims < 256)
			d++, dims++;
		if (dims > 255 || !*d)
			return -EBADMSG;
		if (!first)
			err = put(out, size, &n, ", ", 2);
		if (*d == 'L') {
			const char *end = strchr(++d, ';');

			if (!end || end == d)
				return -EBADMSG;
			for (; !err && d < end; d++)
				err = put(out, size, &n, *d == '/' ? "." : d, 1);
			d++;
		} else if (*d >= 'A' && *d <= 'Z' && prim[*d - 'A']) {
			err = put(out, size, &n, prim[*d - 'A'], strlen(prim[*d - 'A']));
			d++;
		} else {
			return -EBADMSG;
		}
		while (!err && dims--)
			err = put(out, size, &n, "[]", 2);
	}
	if (!err && !d[1])
		return -EBADMSG; /* a return type follows the parameters */
	return err ? err : put(out, size, &n, ")", 1);
}

void ember_jvm_method_free(struct ember_jvm_method *m)
{
	free(m->klass);
	free(m->name);
	free(m->signature);
	free(m->file);
	free(m->lines);
	memset(m, 0, sizeof(*m));
}
