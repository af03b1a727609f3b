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

#define MAX_SYMBOLS     (4u << 20) /* symbols looked at, over all tables */
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

struct sym {
	uint64_t addr, size;
};

struct file {
	Elf *elf;
	const uint8_t *image;
	size_t len;
	GElf_Phdr loads[EMBER_PY_ELF_MAX_SEGMENTS];
	size_t nloads;
	struct sym syms[W_COUNT];
};

/* Reads len bytes at ELF address vaddr, from the file bytes of a loadable segment. */
static int read_at(const struct file *f, uint64_t vaddr, void *buf, size_t len)
{
	for (size_t i = 0; i < f->nloads; i++) {
		const GElf_Phdr *p = &f->loads[i];

		if (vaddr < p->p_vaddr || vaddr - p->p_vaddr > p->p_filesz ||
		    len > p->p_filesz - (vaddr - p->p_vaddr))
			continue;
		if (p->p_offset > f->len || vaddr - p->p_vaddr + len > f->len - p->p_offset)
			return -EBADMSG;
		memcpy(buf, f->image + p->p_offset + (vaddr - p->p_vaddr), len);
		return 0;
	}
	return -ENOENT;
}

static bool in_segment(const struct file *f, uint64_t vaddr, uint32_t flag)
{
	for (size_t i = 0; i < f->nloads; i++)
		if ((f->loads[i].p_flags & flag) && vaddr >= f->loads[i].p_vaddr &&
		    vaddr - f->loads[i].p_vaddr < f->loads[i].p_memsz)
			return true;
	return false;
}

static void scan_symbols(struct file *f)
{
	size_t seen = 0;

	for (Elf_Scn *scn = elf_nextscn(f->elf, NULL); scn; scn = elf_nextscn(f->elf, scn)) {
		Elf_Data *d;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize && seen < MAX_SYMBOLS;
		     i++, seen++) {
			const char *name;
			GElf_Sym s;

			if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF || !s.st_value ||
			    GELF_ST_TYPE(s.st_info) == STT_TLS ||
			    !(name = elf_strptr(f->elf, sh.sh_link, s.st_name)))
				continue;
			for (int w = 0; w < W_COUNT; w++)
				if (!f->syms[w].addr && !strcmp(name, wanted_names[w]))
					f->syms[w] = (struct sym){s.st_value, s.st_size};
		}
	}
}

static int32_t disp32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

int ember_py_decode_tss_key(const uint8_t *code, size_t len, uint64_t vaddr, uint64_t runtime,
                            uint64_t runtime_size, uint64_t *key)
{
	for (size_t i = 0; i + 6 <= len; i++) {
		const uint8_t *p = code + i;
		uint64_t target;

		/* mov r32, [rip + disp]: the key itself (a static build, or 3.6's int). */
		if (p[0] == 0x8b && (p[1] & 0xc7) == 0x05) {
			target = vaddr + i + 6 + (int64_t)disp32(p + 2);
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
			target = vaddr + i + 7 + (int64_t)disp32(p + 3);
			if (target >= runtime && target - runtime <= runtime_size - 8) {
				*key = target + 4;
				return 0;
			}
		}
		/* lea r64, [rax + disp32], rax = &_PyRuntime from the GOT (a shared library). */
		if ((p[2] & 0xc7) == 0x80 && disp32(p + 3) >= 0 &&
		    (uint64_t)disp32(p + 3) + 8 <= runtime_size) {
			*key = runtime + (uint64_t)disp32(p + 3) + 4;
			return 0;
		}
	}
	return -ENOENT;
}

int ember_py_decode_tsd(const uint8_t *code, size_t len, uint16_t *offset)
{
	/* glibc: add $k0, %rax; shl $4, %rax; add %fs:0x10, %rax; mov 8(%rax), %reg:
	 * key k's slot is thread pointer + (k + k0) * 16, its value 8 bytes in. */
	static const uint8_t shl[] = {0x48, 0xc1, 0xe0, 0x04, 0x64, 0x48, 0x03,
	                              0x04, 0x25, 0x10, 0x00, 0x00, 0x00};

	for (size_t i = 0; i + 4 + sizeof(shl) + 4 <= len; i++) {
		const uint8_t *p = code + i, *load = p + 4 + sizeof(shl);

		if (p[0] == 0x48 && p[1] == 0x83 && p[2] == 0xc0 && p[3] < 0x80 &&
		    !memcmp(p + 4, shl, sizeof(shl)) && load[0] == 0x48 && load[1] == 0x8b &&
		    (load[2] & 0xc7) == 0x40) {
			*offset = (uint16_t)(p[3] * 16 + load[3]);
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
	if (read_at(f, at, code, len))
		return -ENOENT;
	for (size_t i = 0; i + 7 <= len; i++) {
		char s[24] = "";

		if ((code[i] & 0xfb) != 0x48 || code[i + 1] != 0x8d || (code[i + 2] & 0xc7) != 0x05)
			continue;
		if (read_at(f, at + i + 7 + (int64_t)disp32(code + i + 3), s, sizeof(s) - 1) &&
		    read_at(f, at + i + 7 + (int64_t)disp32(code + i + 3), s, 8))
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

/* The .eh_frame range of addr, or 0. */
static int fde_range(Dwarf_CFI *cfi, uint64_t addr, uint64_t *start, uint64_t *end)
{
	Dwarf_Frame *frame = NULL;
	Dwarf_Addr s, e;
	int ok;

	if (!cfi || dwarf_cfi_addrframe(cfi, addr, &frame))
		return -ENOENT;
	ok = dwarf_frame_info(frame, &s, &e, NULL) >= 0 && s <= addr && addr < e;
	free(frame);
	if (!ok)
		return -ENOENT;
	*start = s;
	*end = e;
	return 0;
}

/*
 * The cold part of the loop (GCC's -freorder-blocks-and-partition): its
 * .cold symbol, else the .eh_frame range most of the loop's jumps to
 * outside itself land in (the loop jumps into its cold part hundreds of
 * times; a tail call into another function is one jump).
 */
static void find_cold(const struct file *f, Dwarf_CFI *cfi, uint64_t out[2])
{
	const struct sym *hot = &f->syms[W_EVAL], *cold = &f->syms[W_EVAL_COLD];
	struct cold_range best = {0}, cur = {0};
	uint64_t *targets, n = 0, size = hot->size;
	uint8_t *code;

	if (cold->addr) {
		if (fde_range(cfi, cold->addr, &out[0], &out[1])) {
			out[0] = cold->addr;
			out[1] = cold->addr + (cold->size ? cold->size : 1);
		}
		return;
	}
	if (!size || size > MAX_EVAL_BYTES || !cfi)
		return;
	code = malloc(size);
	targets = malloc(MAX_COLD_LOOKUP * sizeof(*targets));
	if (code && targets && !read_at(f, hot->addr, code, size))
		for (uint64_t i = 0; i + 5 <= size && n < MAX_COLD_LOOKUP; i++) {
			uint64_t t;

			if (code[i] == 0xe9)
				t = hot->addr + i + 5 + (int64_t)disp32(code + i + 1);
			else if (code[i] == 0x0f && (code[i + 1] & 0xf0) == 0x80 && i + 6 <= size)
				t = hot->addr + i + 6 + (int64_t)disp32(code + i + 2);
			else
				continue;
			if ((t < hot->addr || t >= hot->addr + size) && in_segment(f, t, PF_X))
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
			if (!fde_range(cfi, targets[i], &cur.start, &cur.end) &&
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
	const struct sym *rt = &f->syms[W_RUNTIME], *gil = &f->syms[W_GILSTATE];
	uint8_t code[STUB_BYTES];
	size_t len = sizeof(code);

	if (f->syms[W_TLS_KEY].addr) { /* 3.6 */
		*key = f->syms[W_TLS_KEY].addr;
		return 0;
	}
	if (gil->size && gil->size < len)
		len = gil->size;
	if (gil->addr && !read_at(f, gil->addr, code, len) &&
	    !ember_py_decode_tss_key(code, len, gil->addr, rt->addr, rt->size, key) &&
	    in_segment(f, *key, PF_W))
		return 0;
	if (rt->addr && l->runtime_tss && l->runtime_tss + 8u <= rt->size) {
		*key = rt->addr + l->runtime_tss + 4;
		return 0;
	}
	return -ENOENT;
}

static void python_facts(struct file *f, const char *path, Dwarf_CFI *cfi, struct ember_py_elf *out)
{
	const struct sym *rt = &f->syms[W_RUNTIME];
	unsigned int major = 0, minor = 0;
	uint64_t hex;
	int err;

	out->kind = EMBER_PY_ELF_UNSUPPORTED;
	if (f->syms[W_VERSION].addr && !read_at(f, f->syms[W_VERSION].addr, &hex, sizeof(hex))) {
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

		err = rt->addr && !read_at(f, rt->addr, buf, n)
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
	GElf_Ehdr eh;
	size_t nph;

	memset(out, 0, sizeof(*out));
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    gelf_getclass(elf) != ELFCLASS64 || eh.e_machine != EM_X86_64 ||
	    elf_getphdrnum(elf, &nph))
		return -ENOEXEC;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->elf = elf;
	f->image = (const uint8_t *)elf_rawfile(elf, &f->len);
	for (size_t i = 0; f->image && i < nph && f->nloads < EMBER_PY_ELF_MAX_SEGMENTS; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD) {
			f->loads[f->nloads++] = ph;
			out->segs[out->nsegs++] =
			    (struct ember_py_segment){ph.p_offset, ph.p_vaddr, ph.p_filesz};
		}
	}
	if (!f->image || !f->nloads) {
		free(f);
		return -ENOEXEC;
	}
	scan_symbols(f);
	if (f->syms[W_GETSPECIFIC].addr) {
		uint8_t code[STUB_BYTES];

		out->has_tsd = !read_at(f, f->syms[W_GETSPECIFIC].addr, code, sizeof(code)) &&
		               !ember_py_decode_tsd(code, sizeof(code), &out->tsd_offset);
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
