// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/python_elf.h"

#include <ctype.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STUB_BYTES      64         /* of PyGILState_GetThisThreadState, Py_GetVersion, ... */
#define MAX_EVAL_BYTES  (1u << 20) /* of the interpreter loop scanned for jumps */
#define MAX_COLD_LOOKUP 4096       /* jump targets looked up in the CFI */
#define MIN_COLD_JUMPS  16         /* jumps into one range that make it the cold part */

enum wanted {
	W_RUNTIME,
	W_VERSION,
	W_GET_VERSION,
	W_EVAL,
	W_EVAL_COLD,
	W_GILSTATE,
	W_TLS_KEY,
	W_CODE_TYPE,
	W_STR_TYPE,
	W_BYTES_TYPE,
	W_GETSPECIFIC,
	W_EVAL_EX, /* Python 2's loop: named, to say it is not supported */
	W_COUNT,
};

static const char *const wanted_names[W_COUNT] = {
    [W_RUNTIME] = "_PyRuntime",
    [W_VERSION] = "Py_Version",
    [W_GET_VERSION] = "Py_GetVersion",
    [W_EVAL] = "_PyEval_EvalFrameDefault",
    [W_EVAL_COLD] = "_PyEval_EvalFrameDefault.cold",
    [W_GILSTATE] = "PyGILState_GetThisThreadState",
    [W_TLS_KEY] = "autoTLSkey", /* 3.6: a static int in pystate.c */
    [W_CODE_TYPE] = "PyCode_Type",
    [W_STR_TYPE] = "PyUnicode_Type",
    [W_BYTES_TYPE] = "PyBytes_Type",
    [W_GETSPECIFIC] = "pthread_getspecific",
    [W_EVAL_EX] = "PyEval_EvalFrameEx",
};

struct file {
	struct ember_elf_image img;
	struct ember_elf_sym syms[W_COUNT];
};

int ember_py_decode_tss_key(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t runtime,
                            uint64_t runtime_size, uint64_t *key)
{
	for (size_t i = 0; i + 6 <= len; i++) {
		const uint8_t *p = code + i;
		uint64_t target;

		/* mov r32, [rip + disp]: the key itself (a static build, or 3.6's int). */
		if (p[0] == 0x8b && (p[1] & 0xc7) == 0x05) {
			target = vaddr + i + 6 + (int64_t)ember_elf_disp32(p + 2);
			if (!runtime_size ||
			    (target >= runtime && target - runtime <= runtime_size - 4)) {
				*key = target;
				return 0;
			}
		}
		if (i + 7 > len || (p[0] & 0xfb) != 0x48 || p[1] != 0x8d || !runtime_size)
			continue;
		/* lea r64, [rip + disp]: the Py_tss_t, its key after an int. */
		if ((p[2] & 0xc7) == 0x05) {
			target = vaddr + i + 7 + (int64_t)ember_elf_disp32(p + 3);
			if (target >= runtime && target - runtime <= runtime_size - 8) {
				*key = target + 4;
				return 0;
			}
		}
		/* lea r64, [rax + disp32], rax = &_PyRuntime from the GOT (a shared library). */
		if ((p[2] & 0xc7) == 0x80 && ember_elf_disp32(p + 3) >= 0 &&
		    (uint64_t)ember_elf_disp32(p + 3) + 8 <= runtime_size) {
			*key = runtime + (uint64_t)ember_elf_disp32(p + 3) + 4;
			return 0;
		}
	}
	return -ENOENT;
}

/* "3.9.18 (main, ...)" -> 3, 9. */
static int parse_version(const char *s, unsigned int *major, unsigned int *minor)
{
	char *end;
	unsigned long ma, mi;

	if (!isdigit((unsigned char)s[0]))
		return -ENOENT;
	ma = strtoul(s, &end, 10);
	if (*end != '.' || !isdigit((unsigned char)end[1]))
		return -ENOENT;
	mi = strtoul(end + 1, &end, 10);
	if (*end != '.' || !isdigit((unsigned char)end[1]) || ma > 9 || mi > 99)
		return -ENOENT;
	*major = (unsigned int)ma;
	*minor = (unsigned int)mi;
	return 0;
}

int ember_py_version_from_path(const char *path, unsigned int *major, unsigned int *minor)
{
	const char *base = path ? strrchr(path, '/') : NULL, *v;
	char *end;
	unsigned long ma, mi;

	base = base ? base + 1 : path;
	if (!base || !(v = strstr(base, "python")))
		return -ENOENT;
	v += 6;
	if (!isdigit((unsigned char)v[0]) || v[1] != '.' || !isdigit((unsigned char)v[2]))
		return -ENOENT;
	ma = strtoul(v, &end, 10);
	mi = strtoul(end + 1, &end, 10);
	if (mi > 99)
		return -ENOENT;
	*major = (unsigned int)ma;
	*minor = (unsigned int)mi;
	return 0;
}

/* The version string Py_GetVersion formats: the rip-relative string it loads that reads "X.Y.Z". */
static int version_from_get_version(const struct file *f, unsigned int *major, unsigned int *minor)
{
	uint8_t code[STUB_BYTES * 2];
	size_t len = sizeof(code);
	uint64_t at = f->syms[W_GET_VERSION].addr;

	if (!at)
		return -ENOENT;
	if (f->syms[W_GET_VERSION].size && f->syms[W_GET_VERSION].size < len)
		len = f->syms[W_GET_VERSION].size;
	if (ember_elf_image_read(&f->img, at, code, len))
		return -ENOENT;
	for (size_t i = 0; i + 7 <= len; i++) {
		char s[24] = "";

		if ((code[i] & 0xfb) != 0x48 || code[i + 1] != 0x8d || (code[i + 2] & 0xc7) != 0x05)
			continue;
		if (ember_elf_image_read(&f->img,
		                         at + i + 7 + (int64_t)ember_elf_disp32(code + i + 3), s,
		                         sizeof(s) - 1) &&
		    ember_elf_image_read(
			&f->img, at + i + 7 + (int64_t)ember_elf_disp32(code + i + 3), s, 8))
			continue;
		if (!parse_version(s, major, minor))
			return 0;
	}
	return -ENOENT;
}

struct cold_range {
	uint64_t start, end;
	uint32_t jumps;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The cold part of the loop (GCC's -freorder-blocks-and-partition): its
 * .cold symbol, else the .eh_frame range most of the loop's jumps to
 * outside itself land in (the loop jumps into its cold part hundreds of
 * times; a tail call into another function is one jump).
 */
static void find_cold(const struct file *f, Dwarf_CFI *cfi, uint64_t out[2])
{
	const struct ember_elf_sym *hot = &f->syms[W_EVAL], *cold = &f->syms[W_EVAL_COLD];
	struct cold_range best = {0}, cur = {0};
	uint64_t *targets, n = 0, size = hot->size;
	uint8_t *code;

	if (cold->addr) {
		if (ember_elf_fde_range(cfi, cold->addr, &out[0], &out[1])) {
			out[0] = cold->addr;
			out[1] = cold->addr + (cold->size ? cold->size : 1);
		}
		return;
	}
	if (!size || size > MAX_EVAL_BYTES || !cfi)
		return;
	code = malloc(size);
	targets = malloc(MAX_COLD_LOOKUP * sizeof(*targets));
	if (code && targets && !ember_elf_image_read(&f->img, hot->addr, code, size))
		for (uint64_t i = 0; i + 5 <= size && n < MAX_COLD_LOOKUP; i++) {
			uint64_t t;

			if (code[i] == 0xe9)
				t = hot->addr + i + 5 + (int64_t)ember_elf_disp32(code + i + 1);
			else if (code[i] == 0x0f && (code[i + 1] & 0xf0) == 0x80 && i + 6 <= size)
				t = hot->addr + i + 6 + (int64_t)ember_elf_disp32(code + i + 2);
			else
				continue;
			if ((t < hot->addr || t >= hot->addr + size) &&
			    ember_elf_image_in_segment(&f->img, t, PF_X))
				targets[n++] = t;
		}
	qsort(targets, n, sizeof(*targets), cmp_u64);
	for (uint64_t i = 0; i < n; i++) {
		if (targets[i] >= cur.start && targets[i] < cur.end) {
			cur.jumps++;
		} else {
			if (cur.jumps > best.jumps)
				best = cur;
			cur = (struct cold_range){0};
			if (!ember_elf_fde_range(cfi, targets[i], &cur.start, &cur.end) &&
			    (cur.end <= hot->addr || cur.start >= hot->addr + size))
				cur.jumps = 1;
			else
				cur = (struct cold_range){0};
		}
	}
	if (cur.jumps > best.jumps)
		best = cur;
	if (best.jumps >= MIN_COLD_JUMPS) {
		out[0] = best.start;
		out[1] = best.end;
	}
	free(code);
	free(targets);
}

/* The key of the thread state: decoded, checked against the version's table. */
static int find_tss_key(const struct file *f, const struct ember_py_layout *l, uint64_t *key)
{
	const struct ember_elf_sym *rt = &f->syms[W_RUNTIME], *gil = &f->syms[W_GILSTATE];
	uint8_t code[STUB_BYTES];
	size_t len = sizeof(code);

	if (f->syms[W_TLS_KEY].addr) { /* 3.6 */
		*key = f->syms[W_TLS_KEY].addr;
		return 0;
	}
	if (gil->size && gil->size < len)
		len = gil->size;
	if (gil->addr && !ember_elf_image_read(&f->img, gil->addr, code, len) &&
	    !ember_py_decode_tss_key(code, len, gil->addr, rt->addr, rt->size, key) &&
	    ember_elf_image_in_segment(&f->img, *key, PF_W))
		return 0;
	if (rt->addr && l->runtime_tss && l->runtime_tss + 8u <= rt->size) {
		*key = rt->addr + l->runtime_tss + 4;
		return 0;
	}
	return -ENOENT;
}

static void python_facts(struct file *f, const char *path, Dwarf_CFI *cfi, struct ember_py_elf *out)
{
	const struct ember_elf_sym *rt = &f->syms[W_RUNTIME];
	unsigned int major = 0, minor = 0;
	uint64_t hex;
	int err;

	out->kind = EMBER_PY_ELF_UNSUPPORTED;
	if (f->syms[W_VERSION].addr &&
	    !ember_elf_image_read(&f->img, f->syms[W_VERSION].addr, &hex, sizeof(hex))) {
		major = (unsigned int)(hex >> 24);
		minor = (unsigned int)(hex >> 16) & 0xff;
	} else if (version_from_get_version(f, &major, &minor) &&
	           ember_py_version_from_path(path, &major, &minor)) {
		out->why = "its version cannot be told";
		return;
	}
	if (minor >= 13) {
		uint8_t buf[EMBER_PY_DEBUG_OFFSETS_BYTES];
		size_t n = rt->size < sizeof(buf) ? rt->size : sizeof(buf);

		err = rt->addr && !ember_elf_image_read(&f->img, rt->addr, buf, n)
		          ? ember_py_layout_from_debug(buf, n, &out->layout)
		          : -ENOENT;
		if (err) {
			out->why = err == -ENOTSUP
			               ? "a free-threaded build or a layout the walker cannot "
			                 "read"
			               : "its _Py_DebugOffsets are missing or malformed";
			return;
		}
	} else if (major != 3 || ember_py_layout_for(major, minor, &out->layout)) {
		out->why = "a version ember does not know (3.6 and later are supported)";
		return;
	}
	if (out->layout.major != major || out->layout.minor != minor) {
		out->why = "its _Py_DebugOffsets disagree with its Py_Version";
		return;
	}
	if (find_tss_key(f, &out->layout, &out->tss_key)) {
		out->why = "its thread-state key cannot be found";
		return;
	}
	out->code_type = f->syms[W_CODE_TYPE].addr;
	out->str_type = f->syms[W_STR_TYPE].addr;
	out->bytes_type = f->syms[W_BYTES_TYPE].addr;
	if (!out->code_type || !out->str_type || !out->bytes_type || !f->syms[W_EVAL].size) {
		out->why = "its symbols are missing";
		return;
	}
	out->eval[0][0] = f->syms[W_EVAL].addr;
	out->eval[0][1] = f->syms[W_EVAL].addr + f->syms[W_EVAL].size;
	find_cold(f, cfi, out->eval[1]);
	out->kind = EMBER_PY_ELF_PYTHON;
}

static int read_elf(Elf *elf, const char *path, struct ember_py_elf *out)
{
	struct file *f;
	Dwarf_CFI *cfi;
	int err;

	memset(out, 0, sizeof(*out));
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	err = ember_elf_image_start(elf, &f->img, out->segs, &out->nsegs, wanted_names, W_COUNT,
	                            f->syms);
	if (err) {
		free(f);
		return err;
	}
	for (int w = 0; w < W_COUNT; w++) /* no thread-local variable is wanted */
		if (f->syms[w].type == STT_TLS)
			f->syms[w] = (struct ember_elf_sym){0};
	if (f->syms[W_GETSPECIFIC].addr) {
		uint8_t code[STUB_BYTES];

		out->has_tsd = !ember_elf_image_read(&f->img, f->syms[W_GETSPECIFIC].addr, code,
		                                     sizeof(code)) &&
		               !ember_elf_glibc_tsd(code, sizeof(code), &out->tsd_offset);
	}
	if (f->syms[W_EVAL].addr &&
	    (f->syms[W_RUNTIME].addr || f->syms[W_TLS_KEY].addr || f->syms[W_GILSTATE].addr)) {
		cfi = dwarf_getcfi_elf(elf);
		python_facts(f, path, cfi, out);
		if (cfi)
			dwarf_cfi_end(cfi);
	} else if (f->syms[W_EVAL_EX].addr && f->syms[W_GET_VERSION].addr) {
		out->kind = EMBER_PY_ELF_UNSUPPORTED;
		out->why = "Python 2 (ember reads CPython 3.6 and later)";
	}
	free(f);
	return 0;
}

int ember_py_elf_read(int fd, const char *path, struct ember_py_elf *out)
{
	Elf *elf;
	int err;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	err = read_elf(elf, path, out);
	elf_end(elf);
	return err;
}

int ember_py_elf_read_mem(const void *image, size_t len, const char *path, struct ember_py_elf *out)
{
	Elf *elf;
	int err;

	elf_version(EV_CURRENT);
	elf = elf_memory((char *)image, len);
	err = read_elf(elf, path, out);
	elf_end(elf);
	return err;
}
