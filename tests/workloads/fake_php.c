// SPDX-License-Identifier: Apache-2.0
/*
 * A hostile "interpreter": to ember it looks like a PHP 8.2 CLI, not thread-safe (the
 * X-Powered-By string, executor_globals, an interpreter loop execute_ex that burns
 * CPU), but the call frame its executor globals name leads to what a compromised
 * process could put there. Build with -rdynamic.
 *
 *   fake_php MODE SECONDS
 *
 *   cycle     a user function's frame whose caller is itself
 *   garbage   frames and functions of random bytes, rewritten all the time
 *   unmapped  the current frame is an address nothing maps
 *   forged    well-typed functions whose strings and classes lie (huge lengths, strings
 *             of another type, classes of no known type); one named "forged_name" whose
 *             current opline is none of its own
 *   churn     a chain of frames whose links and functions another thread keeps swapping
 *             and rewriting
 */
#include "fake_interp.h"

/* PHP 8.2's layout (symbolizer/interp/php_layout.c). */
#define EG_CURRENT_EX 0x1e8
#define EX_OPLINE     0x00
#define EX_FUNC       0x18
#define EX_CALL_INFO  0x28
#define EX_PREV       0x30
#define FN_TYPE       0x00
#define FN_NAME       0x08
#define FN_SCOPE      0x10
#define FN_LAST       0x50
#define FN_OPCODES    0x58
#define FN_FILENAME   0x98
#define FN_LINES      0xa0
#define OP_SIZE       32
#define OP_LINENO     0x18
#define STR_INFO      4
#define STR_LEN       0x10
#define STR_VAL       0x18
#define IS_STRING     6
#define FUNC_USER     2

/* What makes a file PHP's to ember: the version string, the globals, the loop. */
__attribute__((used)) const char php_powered_by[] = "X-Powered-By: PHP/8.2.99";
unsigned char executor_globals[0x600] __attribute__((aligned(64)));

/* The "interpreter loop": samples land here, and the walker starts. */
__attribute__((noinline)) void execute_ex(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i;
}

/* A zend_string at p: of type type, its length len (its bytes may be fewer). */
static void str_at(uint8_t *p, const char *s, uint64_t len, uint32_t type)
{
	put32(p + STR_INFO, type);
	put64(p + STR_LEN, len);
	memcpy(p + STR_VAL, s, strlen(s));
}

/* A user function named name, in file, with four oplines at ops (lines 10 to 13). */
static void func_at(uint8_t *fn, uint8_t *name, uint8_t *scope, uint8_t *file, uint8_t *ops)
{
	fn[FN_TYPE] = FUNC_USER;
	put64(fn + FN_NAME, (uint64_t)name);
	put64(fn + FN_SCOPE, (uint64_t)scope);
	put32(fn + FN_LAST, 4);
	put64(fn + FN_OPCODES, (uint64_t)ops);
	put64(fn + FN_FILENAME, (uint64_t)file);
	put32(fn + FN_LINES, 10);
	put32(fn + FN_LINES + 4, 13);
	for (uint32_t i = 0; i < 4; i++)
		put32(ops + OP_SIZE * i + OP_LINENO, 10 + i);
}

static void frame_at(uint8_t *ex, uint8_t *fn, uint8_t *opline, uint8_t *prev)
{
	put64(ex + EX_OPLINE, (uint64_t)opline);
	put64(ex + EX_FUNC, (uint64_t)fn);
	put32(ex + EX_CALL_INFO, 0); /* never ZEND_CALL_TOP: the walk goes on */
	put64(ex + EX_PREV, (uint64_t)prev);
}

static void setup(void)
{
	uint8_t *frames = arena, *funcs = arena + 8192, *strs = arena + 16384, *ops = arena + 32768;

	if (!strcmp(mode, "cycle")) {
		str_at(strs, "cyc", 3, IS_STRING);
		str_at(strs + 256, "/cycle.php", 10, IS_STRING);
		func_at(funcs, strs, NULL, strs + 256, ops);
		frame_at(frames, funcs, ops + OP_SIZE, frames);
	} else if (!strcmp(mode, "unmapped")) {
		put64(executor_globals + EG_CURRENT_EX, 0x10000);
		return;
	} else if (!strcmp(mode, "garbage") || !strcmp(mode, "churn")) {
		fill_arena();
	} else if (!strcmp(mode, "forged")) {
		/* Eight frames, each with a function lying differently. */
		uint8_t *file = strs + 4096, *cls = strs + 6144;

		str_at(file, "/forged.php", 11, IS_STRING);
		for (int i = 0; i < 8; i++) {
			uint8_t *fn = funcs + 256 * i;

			func_at(fn, strs + 512 * i, NULL, file, ops + 256 * i);
			frame_at(frames + 128 * i, fn, ops + 256 * i,
			         i < 7 ? frames + 128 * (i + 1) : NULL);
		}
		str_at(strs, "huge", 1ull << 40, IS_STRING);        /* length */
		str_at(strs + 512, "neg", (uint64_t)-1, IS_STRING); /* negative */
		str_at(strs + 1024, "array", 5, 7);                 /* an array, not a string */
		str_at(strs + 1536, "classless", 9, IS_STRING);     /* of a class of no type: */
		put64(funcs + 256 * 3 + FN_SCOPE, (uint64_t)cls);
		cls[0] = 9;
		put64(cls + 8, (uint64_t)strs);
		str_at(strs + 2048, "nulls\0\0", 7, IS_STRING); /* bytes 5, 6 are NUL */
		put64(funcs + 256 * 5 + FN_FILENAME, 0x10000);  /* a file name nothing maps */
		str_at(strs + 2560, "whatever", 8, IS_STRING);
		str_at(strs + 3072, "forged_name", 11, IS_STRING);           /* fine, but: */
		put64(frames + 128 * 6 + EX_OPLINE, (uint64_t)(ops + 4096)); /* not its opline */
		funcs[256 * 7 + FN_TYPE] = 0x33;                             /* no function type */
	}
	put64(executor_globals + EG_CURRENT_EX, (uint64_t)frames);
}

/* churn: frames link to random frames, functions are swapped and rewritten. */
static void *churn(void *arg)
{
	(void)arg;
	while (!stop) {
		uint8_t *ex = arena + 128 * (rnd() % 64);

		put64(ex + EX_PREV, (uint64_t)(arena + 128 * (rnd() % 64)));
		put64(ex + EX_FUNC, (uint64_t)(arena + 8192 + 256 * (rnd() % 32)));
		arena[8192 + rnd() % 8192] = (uint8_t)rnd();
		arena[8192 + 256 * (rnd() % 32)] = (uint8_t)(rnd() % 5);
		put64(executor_globals + EG_CURRENT_EX, (uint64_t)(arena + 128 * (rnd() % 64)));
	}
	return NULL;
}

int main(int argc, char **argv)
{
	return fake_main(argc, argv, setup, churn, execute_ex, 0);
}
