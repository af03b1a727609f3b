// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/symbols/demangle.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* From the C++ runtime (libstdc++), present on every system. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

struct out {
	char *buf;
	size_t size, len;
	bool full;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->len + n >= o->size) {
		o->full = true;
		return;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* ---- Rust legacy: _ZN <len><ident>... E, last ident "h" + 16 hex digits ---- */

static const struct {
	const char *code, *text;
} rust_escapes[] = {
    {"$SP$", "@"}, {"$BP$", "*"}, {"$RF$", "&"}, {"$LT$", "<"},
    {"$GT$", ">"}, {"$LP$", "("}, {"$RP$", ")"}, {"$C$", ","},
};

static bool legacy_ident(struct out *o, const char *s, size_t n)
{
	size_t i = 0;

	if (n >= 2 && s[0] == '_' && s[1] == '$')
		i = 1;
	while (i < n) {
		size_t k;

		if (s[i] == '.') {
			if (i + 1 < n && s[i + 1] == '.') {
				put(o, "::", 2);
				i += 2;
			} else {
				put(o, ".", 1);
				i++;
			}
			continue;
		}
		if (s[i] != '$') {
			put(o, s + i, 1);
			i++;
			continue;
		}
		for (k = 0; k < sizeof(rust_escapes) / sizeof(rust_escapes[0]); k++) {
			size_t cl = strlen(rust_escapes[k].code);

			if (cl <= n - i && !memcmp(s + i, rust_escapes[k].code, cl)) {
				puts_(o, rust_escapes[k].text);
				i += cl;
				break;
			}
		}
		if (k < sizeof(rust_escapes) / sizeof(rust_escapes[0]))
			continue;
		/* $uXX$: a character by its hex code. */
		if (i + 1 < n && s[i + 1] == 'u') {
			size_t j = i + 2;
			unsigned int cp = 0;

			for (; j < n && is_hex(s[j]) && j - i < 8; j++)
				cp = cp * 16 +
				     (unsigned int)(s[j] <= '9' ? s[j] - '0' : s[j] - 'a' + 10);
			if (j < n && s[j] == '$' && cp >= 0x20 && cp < 0x7f) {
				char c = (char)cp;

				put(o, &c, 1);
				i = j + 1;
				continue;
			}
		}
		return false;
	}
	return true;
}

static int rust_legacy(const char *name, struct out *o)
{
	const char *p = name, *end = name + strlen(name);
	const char *idents[128];
	size_t lens[128], n = 0;

	if (!strncmp(p, "_ZN", 3))
		p += 3;
	else
		return 0;
	while (p < end && *p != 'E') {
		size_t len = 0;

		if (*p < '0' || *p > '9')
			return 0;
		while (p < end && *p >= '0' && *p <= '9' && len < 100000)
			len = len * 10 + (size_t)(*p++ - '0');
		if (!len || len > (size_t)(end - p) || n == 128)
			return 0;
		idents[n] = p;
		lens[n++] = len;
		p += len;
	}
	if (p >= end || n < 2 || lens[n - 1] != 17 || idents[n - 1][0] != 'h')
		return 0;
	for (size_t i = 1; i < 17; i++)
		if (!is_hex(idents[n - 1][i]))
			return 0;
	for (size_t i = 0; i + 1 < n; i++) {
		if (i)
			put(o, "::", 2);
		if (!legacy_ident(o, idents[i], lens[i]))
			return 0;
	}
	return 1;
}

/* ---- Rust v0: _R... ---- */

struct v0 {
	const char *s; /* after "_R" */
	size_t len, pos;
	unsigned int depth;
	unsigned int steps;   /* paths and types decoded, back references included */
	unsigned int in_type; /* inside a type: paths print generics as <...> */
	struct out *o;
	bool bad;
};

static bool v0_eat(struct v0 *d, char c)
{
	if (d->pos < d->len && d->s[d->pos] == c) {
		d->pos++;
		return true;
	}
	return false;
}

static char v0_peek(const struct v0 *d)
{
	return d->pos < d->len ? d->s[d->pos] : '\0';
}

static uint64_t v0_base62(struct v0 *d)
{
	uint64_t v = 0;

	if (v0_eat(d, '_'))
		return 0;
	while (d->pos < d->len) {
		char c = d->s[d->pos++];
		unsigned int digit;

		if (c == '_')
			return v + 1;
		if (c >= '0' && c <= '9')
			digit = (unsigned int)(c - '0');
		else if (c >= 'a' && c <= 'z')
			digit = 10 + (unsigned int)(c - 'a');
		else if (c >= 'A' && c <= 'Z')
			digit = 36 + (unsigned int)(c - 'A');
		else
			break;
		if (v > UINT64_MAX / 62 - 1)
			break;
		v = v * 62 + digit;
	}
	d->bad = true;
	return 0;
}

static void v0_disambiguator(struct v0 *d)
{
	if (v0_eat(d, 's'))
		v0_base62(d);
}

static void v0_ident(struct v0 *d, bool print)
{
	bool puny = v0_eat(d, 'u');
	size_t n = 0;

	if (v0_peek(d) < '0' || v0_peek(d) > '9') {
		d->bad = true;
		return;
	}
	while (v0_peek(d) >= '0' && v0_peek(d) <= '9' && n < 100000)
		n = n * 10 + (size_t)(d->s[d->pos++] - '0');
	v0_eat(d, '_');
	if (n > d->len - d->pos || puny) {
		d->bad = true; /* punycode identifiers are not decoded */
		return;
	}
	if (print)
		put(d->o, d->s + d->pos, n);
	d->pos += n;
}

static void v0_path(struct v0 *d);
static void v0_type(struct v0 *d);

/* Parses what parse reads without printing it. */
static void v0_silently(struct v0 *d, void (*parse)(struct v0 *))
{
	struct out *real = d->o, scratch = {0};
	char tmp[512];

	scratch.buf = tmp;
	scratch.size = sizeof(tmp);
	d->o = &scratch;
	parse(d);
	d->o = real;
}

static bool v0_enter(struct v0 *d)
{
	if (d->bad || ++d->depth > EMBER_DEMANGLE_MAX_DEPTH ||
	    ++d->steps > EMBER_DEMANGLE_MAX_STEPS) {
		d->bad = true;
		return false;
	}
	return true;
}

/* Runs fn at a back reference, then returns to where the reference was. */
static void v0_backref(struct v0 *d, void (*fn)(struct v0 *))
{
	size_t at = d->pos - 1; /* the 'B' */
	uint64_t target = v0_base62(d);
	size_t back = d->pos;

	if (d->bad || target >= at) {
		d->bad = true;
		return;
	}
	d->pos = (size_t)target;
	fn(d);
	d->pos = back;
}

static void v0_const(struct v0 *d)
{
	uint64_t v = 0;
	char num[24];
	int n;

	if (v0_eat(d, 'p')) {
		puts_(d->o, "_");
		return;
	}
	if (v0_eat(d, 'B')) {
		v0_backref(d, v0_const);
		return;
	}
	v0_silently(d, v0_type); /* the constant's type is not shown */
	if (d->bad)
		return;
	if (v0_eat(d, 'n'))
		puts_(d->o, "-");
	while (is_hex(v0_peek(d))) {
		char c = d->s[d->pos++];

		v = (v << 4) | (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
	}
	if (!v0_eat(d, '_')) {
		d->bad = true;
		return;
	}
	n = 0;
	do
		num[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < 23);
	while (n)
		put(d->o, &num[--n], 1);
}

static void v0_generic_args(struct v0 *d)
{
	bool first = true;

	puts_(d->o, "<");
	while (!d->bad && !v0_eat(d, 'E')) {
		if (d->pos >= d->len) {
			d->bad = true;
			return;
		}
		if (!first)
			puts_(d->o, ", ");
		first = false;
		if (v0_eat(d, 'L')) {
			v0_base62(d);
			puts_(d->o, "'_");
		} else if (v0_eat(d, 'K')) {
			v0_const(d);
		} else {
			v0_type(d);
		}
	}
	puts_(d->o, ">");
}

/* Rust's basic types, by their v0 letter. */
static const char *const v0_basic_types[26] = {
    ['a' - 'a'] = "i8",    ['b' - 'a'] = "bool", ['c' - 'a'] = "char", ['d' - 'a'] = "f64",
    ['e' - 'a'] = "str",   ['f' - 'a'] = "f32",  ['h' - 'a'] = "u8",   ['i' - 'a'] = "isize",
    ['j' - 'a'] = "usize", ['l' - 'a'] = "i32",  ['m' - 'a'] = "u32",  ['n' - 'a'] = "i128",
    ['o' - 'a'] = "u128",  ['p' - 'a'] = "_",    ['s' - 'a'] = "i16",  ['t' - 'a'] = "u16",
    ['u' - 'a'] = "()",    ['v' - 'a'] = "...",  ['x' - 'a'] = "i64",  ['y' - 'a'] = "u64",
    ['z' - 'a'] = "!",
};

static const char *v0_basic(char c)
{
	return c >= 'a' && c <= 'z' ? v0_basic_types[c - 'a'] : NULL;
}

static void v0_type(struct v0 *d)
{
	const char *basic;
	char c;

	if (!v0_enter(d))
		return;
	c = v0_peek(d);
	basic = v0_basic(c);
	if (basic) {
		d->pos++;
		puts_(d->o, basic);
	} else if (v0_eat(d, 'R') || v0_eat(d, 'Q')) {
		puts_(d->o, c == 'R' ? "&" : "&mut ");
		if (v0_eat(d, 'L'))
			v0_base62(d);
		v0_type(d);
	} else if (v0_eat(d, 'P') || v0_eat(d, 'O')) {
		puts_(d->o, c == 'P' ? "*const " : "*mut ");
		v0_type(d);
	} else if (v0_eat(d, 'A') || v0_eat(d, 'S')) {
		puts_(d->o, "[");
		v0_type(d);
		if (c == 'A') {
			puts_(d->o, "; ");
			v0_const(d);
		}
		puts_(d->o, "]");
	} else if (v0_eat(d, 'T')) {
		bool first = true;

		puts_(d->o, "(");
		while (!d->bad && !v0_eat(d, 'E')) {
			if (d->pos >= d->len)
				d->bad = true;
			if (!first)
				puts_(d->o, ", ");
			first = false;
			v0_type(d);
		}
		puts_(d->o, ")");
	} else if (v0_eat(d, 'B')) {
		v0_backref(d, v0_type);
	} else if (c == 'F' || c == 'D') {
		d->bad = true; /* function pointers and trait objects: not decoded */
	} else {
		d->in_type++;
		v0_path(d);
		d->in_type--;
	}
	d->depth--;
}

static void v0_path(struct v0 *d)
{
	char c, ns;

	if (!v0_enter(d))
		return;
	c = d->pos < d->len ? d->s[d->pos++] : '\0';
	switch (c) {
	case 'C':
		v0_disambiguator(d);
		v0_ident(d, true);
		break;
	case 'N':
		ns = d->pos < d->len ? d->s[d->pos++] : '\0';
		v0_path(d);
		if (d->bad)
			break;
		v0_disambiguator(d);
		if (ns == 'C') {
			puts_(d->o, "::{closure}");
			v0_ident(d, false);
		} else if (ns == 'S') {
			puts_(d->o, "::{shim}");
			v0_ident(d, false);
		} else {
			size_t mark = d->o->len;

			puts_(d->o, "::");
			v0_ident(d, true);
			if (d->o->len == mark + 2) /* an empty name adds nothing */
				d->o->len = mark, d->o->buf[mark] = '\0';
		}
		break;
	case 'M':
		/* The impl path is context only; print the self type. */
		v0_disambiguator(d);
		v0_silently(d, v0_path);
		puts_(d->o, "<");
		v0_type(d);
		puts_(d->o, ">");
		break;
	case 'X': /* a trait impl: <Type as Trait>, as 'Y' once the impl path is skipped */
		v0_disambiguator(d);
		v0_silently(d, v0_path); /* the impl path is context only */
		__attribute__((fallthrough));
	case 'Y':
		puts_(d->o, "<");
		v0_type(d);
		puts_(d->o, " as ");
		v0_path(d);
		puts_(d->o, ">");
		break;
	case 'I':
		v0_path(d);
		/* In an expression path generic arguments read ::<...>. */
		if (!d->in_type)
			puts_(d->o, "::");
		v0_generic_args(d);
		break;
	case 'B':
		v0_backref(d, v0_path);
		break;
	default:
		d->bad = true;
	}
	d->depth--;
}

static int rust_v0(const char *name, struct out *o)
{
	struct v0 d = {0};

	if (strncmp(name, "_R", 2))
		return 0;
	d.s = name + 2;
	d.len = strlen(d.s);
	d.o = o;
	/* An optional encoding version: decimal digits then '_'. */
	if (d.len && d.s[0] >= '0' && d.s[0] <= '9')
		return 0;
	v0_path(&d);
	/* An instantiating crate may follow; it is not shown. */
	if (d.bad)
		return 0;
	return 1;
}

/*
 * Whether name has few enough back references for __cxa_demangle: S<seq>_,
 * T<n>_ (a letter, then digits and capitals, then '_') and function
 * parameters (fp, fL). Letters inside identifiers count too: a cap on an
 * overestimate.
 */
static bool cxx_refs_ok(const char *name)
{
	unsigned int refs = 0;
	bool in_ref = false;

	for (const char *p = name; *p; p++) {
		if (*p == 'S' || *p == 'T')
			in_ref = true;
		else if (*p == '_' && in_ref)
			refs++, in_ref = false;
		else if (!((*p >= '0' && *p <= '9') || (*p >= 'A' && *p <= 'Z')))
			in_ref = false;
		if (p[0] == 'f' && (p[1] == 'p' || p[1] == 'L'))
			refs++;
		if (refs > EMBER_DEMANGLE_MAX_CXX_REFS)
			return false;
	}
	return true;
}

static int cxx(const char *name, struct out *o)
{
	int status = 0;
	char *r;

	if (strncmp(name, "_Z", 2) || !cxx_refs_ok(name))
		return 0;
	r = __cxa_demangle(name, NULL, NULL, &status);
	if (!r || status)
		return 0;
	puts_(o, r);
	free(r);
	return 1;
}

static int demangle_name(const char *name, size_t len, char *buf, size_t size)
{
	struct out o = {buf, size, 0, false};
	int r;

	if (len < 3 || name[0] != '_')
		return 0;
	r = rust_legacy(name, &o);
	if (!r) {
		o.len = 0, buf[0] = '\0', o.full = false;
		r = rust_v0(name, &o);
	}
	if (!r) {
		o.len = 0, buf[0] = '\0', o.full = false;
		r = cxx(name, &o);
	}
	if (r && o.full)
		return -ENOSPC;
	return r;
}

static const char plt_suffix[] = "@plt";

/*
 * ember's own name of a PLT entry, "target@plt" (len bytes), demangled as
 * objdump -C prints it: the target, then the suffix ("std::terminate()@plt").
 * Apart from ember_demangle, whose every call would otherwise set up (and
 * probe) this buffer.
 */
static __attribute__((noinline)) int demangle_plt_name(const char *name, size_t len, char *buf,
                                                       size_t size)
{
	char stem[EMBER_DEMANGLE_MAX_INPUT + 1];
	size_t n;
	int r;

	len -= sizeof(plt_suffix) - 1;
	memcpy(stem, name, len);
	stem[len] = '\0';
	r = demangle_name(stem, len, buf, size);
	if (r != 1)
		return r;
	n = strlen(buf);
	if (n + sizeof(plt_suffix) > size) {
		buf[0] = '\0';
		return -ENOSPC;
	}
	memcpy(buf + n, plt_suffix, sizeof(plt_suffix));
	return 1;
}

int ember_demangle(const char *name, char *buf, size_t size)
{
	size_t len;

	if (!size)
		return -ENOSPC;
	buf[0] = '\0';
	if (name[0] != '_') /* every mangled name, and every mangled PLT target */
		return 0;
	len = strnlen(name, EMBER_DEMANGLE_MAX_INPUT + 1);
	if (len > EMBER_DEMANGLE_MAX_INPUT)
		return 0;
	if (len >= sizeof(plt_suffix) &&
	    !memcmp(name + len - (sizeof(plt_suffix) - 1), plt_suffix, sizeof(plt_suffix) - 1))
		return demangle_plt_name(name, len, buf, size);
	return demangle_name(name, len, buf, size);
}
