// SPDX-License-Identifier: Apache-2.0
/*
 * A hostile "interpreter": to ember it looks like CPython 3.12 (Py_Version,
 * _PyRuntime with the thread-state key where PyGILState_GetThisThreadState
 * reads it, the type objects, an interpreter loop that burns CPU), but the
 * thread state it publishes leads to what a compromised process could put
 * there. Build with -rdynamic.
 *
 *   fake_python MODE SECONDS
 *
 *   cycle     a frame whose caller is itself
 *   garbage   frames and code objects of random bytes, rewritten all the time
 *   unmapped  the current frame is an address nothing maps
 *   forged    well-typed code objects whose strings and line tables lie
 *             (huge lengths, legacy strings, wrong types); one named
 *             "forged_name" whose line table is garbage
 *   churn     a chain of frames whose links and code objects another
 *             thread keeps swapping, freeing and reusing
 */
#include "fake_interp.h"

/* CPython 3.12's layout (symbolizer/interp/python_layout.c). */
#define TSTATE_CFRAME   56
#define FRAME_CODE      0
#define FRAME_PREVIOUS  8
#define FRAME_INSTR     56
#define FRAME_OWNER     70
#define CODE_TYPE       8
#define CODE_ARGCOUNT   52
#define CODE_FIRSTLINE  68
#define CODE_FILENAME   112
#define CODE_NAME       120
#define CODE_QUALNAME   128
#define CODE_LINETABLE  136
#define CODE_UNITS      192
#define STR_LENGTH      16
#define STR_STATE       32
#define STR_ASCII_DATA  40
#define BYTES_SIZE      16
#define RUNTIME_TSS_KEY 1548 /* the Py_tss_t at 1544, its key after an int */

const unsigned long Py_Version = 0x030c01f0;
unsigned char _PyRuntime[4096] __attribute__((aligned(64)));
unsigned char PyCode_Type[416], PyUnicode_Type[416], PyBytes_Type[416];

/* What ember decodes to find the key: mov _PyRuntime+1548(%rip), %edi. */
__asm__(".globl PyGILState_GetThisThreadState\n"
        ".type PyGILState_GetThisThreadState, @function\n"
        "PyGILState_GetThisThreadState:\n"
        "\tmovl _PyRuntime+1548(%rip), %edi\n"
        "\tjmp pthread_getspecific@PLT\n"
        ".size PyGILState_GetThisThreadState, .-PyGILState_GetThisThreadState\n");

static uint8_t tstate[512] __attribute__((aligned(64)));
static uint8_t cframe[64] __attribute__((aligned(64)));

/* The "interpreter loop": samples land here, and the walker starts. */
__attribute__((noinline)) void _PyEval_EvalFrameDefault(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i;
}

/* A str object at p: ascii, compact, of length len (its data may lie). */
static void str_at(uint8_t *p, const char *s, uint64_t len, uint32_t state)
{
	put64(p + CODE_TYPE, (uint64_t)PyUnicode_Type);
	put64(p + STR_LENGTH, len);
	put32(p + STR_STATE, state);
	memcpy(p + STR_ASCII_DATA, s, strlen(s));
}

static void code_at(uint8_t *code, uint8_t *name, uint8_t *file, uint8_t *table)
{
	put64(code + CODE_TYPE, (uint64_t)PyCode_Type);
	put32(code + CODE_ARGCOUNT, 1);
	put32(code + CODE_FIRSTLINE, 10);
	put64(code + CODE_NAME, (uint64_t)name);
	put64(code + CODE_QUALNAME, (uint64_t)name);
	put64(code + CODE_FILENAME, (uint64_t)file);
	put64(code + CODE_LINETABLE, (uint64_t)table);
}

static void frame_at(uint8_t *frame, uint8_t *code, uint8_t *previous)
{
	put64(frame + FRAME_CODE, (uint64_t)code);
	put64(frame + FRAME_PREVIOUS, (uint64_t)previous);
	put64(frame + FRAME_INSTR, (uint64_t)code + CODE_UNITS + 8);
	frame[FRAME_OWNER] = 0;
}

static void setup(void)
{
	pthread_key_t key;
	uint8_t *frames = arena, *codes = arena + 8192, *strs = arena + 16384;
	const uint32_t ascii = 1u << 2 | 1u << 5 | 1u << 6;

	if (pthread_key_create(&key, NULL))
		exit(1);
	put32(_PyRuntime + RUNTIME_TSS_KEY - 4, 1); /* _is_initialized */
	put32(_PyRuntime + RUNTIME_TSS_KEY, (uint32_t)key);
	put64(tstate + TSTATE_CFRAME, (uint64_t)cframe);
	pthread_setspecific(key, tstate);

	if (!strcmp(mode, "cycle")) {
		code_at(codes, strs, strs, strs); /* a str where the line table should be */
		str_at(strs, "cyc", 3, ascii);
		frame_at(frames, codes, frames);
	} else if (!strcmp(mode, "unmapped")) {
		put64(cframe, 0x10000);
		return;
	} else if (!strcmp(mode, "garbage") || !strcmp(mode, "churn")) {
		fill_arena();
	} else if (!strcmp(mode, "forged")) {
		/* Eight frames, each with a code object lying differently. */
		for (int i = 0; i < 8; i++) {
			uint8_t *code = codes + 256 * i, *name = strs + 512 * i,
				*file = strs + 4096;

			code_at(code, name, file, strs + 6144);
			frame_at(frames + 128 * i, code, i < 7 ? frames + 128 * (i + 1) : NULL);
		}
		str_at(strs + 4096, "/forged.py", 10, ascii);
		str_at(strs, "huge", 1ull << 40, ascii);                /* length */
		str_at(strs + 512, "neg", (uint64_t)-1, ascii);         /* negative */
		str_at(strs + 1024, "legacy", 6, 1u << 2);              /* not compact */
		str_at(strs + 1536, "kind3", 5, 3u << 2 | 1u << 5);     /* no such kind */
		str_at(strs + 2048, "\xff\xfe", 2, ascii);              /* "ascii" */
		put64(strs + 2560 + CODE_TYPE, (uint64_t)PyBytes_Type); /* not a str */
		str_at(strs + 3072, "forged_name", 11, ascii);          /* fine, but: */
		put64(strs + 6144 + CODE_TYPE, (uint64_t)PyBytes_Type); /* a garbage table */
		put64(strs + 6144 + BYTES_SIZE, 64);
		memset(strs + 6144 + 32, 0x7f, 64);
		put64(codes + 256 * 7 + CODE_TYPE, 0x1234); /* not a code object */
	}
	put64(cframe, (uint64_t)frames);
}

/* churn: frames link to random frames, code objects are swapped and rewritten. */
static void *churn(void *arg)
{
	(void)arg;
	while (!stop) {
		uint8_t *frame = arena + 128 * (rnd() % 64);

		put64(frame + FRAME_PREVIOUS, (uint64_t)(arena + 128 * (rnd() % 64)));
		put64(frame + FRAME_CODE, (uint64_t)(arena + 8192 + 256 * (rnd() % 32)));
		frame[FRAME_OWNER] = (uint8_t)(rnd() % 5);
		arena[8192 + rnd() % 8192] = (uint8_t)rnd();
		put64(cframe, (uint64_t)(arena + 128 * (rnd() % 64)));
	}
	return NULL;
}

int main(int argc, char **argv)
{
	return fake_main(argc, argv, setup, churn, _PyEval_EvalFrameDefault, 0);
}
