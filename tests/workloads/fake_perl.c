// SPDX-License-Identifier: Apache-2.0
/*
 * A hostile "interpreter": to ember it looks like a threaded Perl 5.36 (PL_revision,
 * PL_version, PL_subversion, PL_thr_key with the interpreter behind it, an interpreter
 * loop Perl_runops_standard that burns CPU), but the context stack its interpreter
 * holds leads to what a compromised process could put there. Build with -rdynamic.
 *
 *   fake_perl MODE SECONDS
 *
 *   cycle     a stackinfo whose outer stackinfo is itself, with one sub in it
 *   garbage   stackinfos, contexts and CVs of random bytes, rewritten all the time
 *   unmapped  the current stackinfo's context entries are at an address nothing maps
 *   forged    well-typed subs whose names and packages lie (huge and negative lengths,
 *             a GV of the wrong type, a stash without a name, a file name nothing maps);
 *             one named "Forged::forged_name", one with a context entry of no known type
 *   churn     a context stack whose entries, CVs and links another thread keeps
 *             swapping and rewriting
 */
#include "fake_interp.h"

/* Perl 5.36's layout (symbolizer/interp/perl_layout.c). */
#define I_CURSTACKINFO 0xe0
#define I_CURCOP       0xd0
#define SI_CXSTACK     0x08
#define SI_PREV        0x10
#define SI_CXIX        0x20
#define SI_CXSUBIX     0x28
#define CX_SIZE        104
#define CX_TYPE        0x00
#define CX_OLDCOP      0x10
#define CX_RETOP       0x30
#define CX_SUBIX       0x38
#define CX_CV          0x48
#define COP_LINE       0x24
#define COP_FILE       0x30
#define SV_FLAGS       0x0c
#define CV_STASH       0x20
#define CV_GV          0x38
#define CV_FILE        0x40
#define CV_FLAGS       0x5c
#define GV_NAME        0x20
#define GV_STASH       0x28
#define HV_NAME        0x20
#define HEK_LEN        4
#define HEK_KEY        8
#define CXT_SUB        9
#define SVT_PVGV       9
#define SVT_PVHV       12
#define SVT_PVCV       13
#define SVPGV_GP       0x8000u
#define SVF_OOK        0x02000000u

/* What makes a file Perl's to ember: the version bytes, the key, the loop. */
const unsigned char PL_revision = 5, PL_version = 36, PL_subversion = 0;
unsigned int PL_thr_key = 0xffffffffu; /* initialized data: a writable global of 4 bytes */

static uint8_t interp[4096] __attribute__((aligned(64)));

/* The "interpreter loop": samples land here, and the walker starts. */
__attribute__((noinline)) void Perl_runops_standard(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i;
}

/* An SV head at sv: its body and type (flags). */
static void sv_at(uint8_t *sv, uint8_t *body, uint32_t flags)
{
	put64(sv, (uint64_t)body);
	put32(sv + SV_FLAGS, flags);
}

/* A HEK at p of length len (its bytes may be fewer). */
static void hek_at(uint8_t *p, const char *s, int32_t len)
{
	put32(p + HEK_LEN, (uint32_t)len);
	memcpy(p + HEK_KEY, s, strlen(s));
}

/*
 * A sub at sv (its body 128 bytes on), named through a GV at gv (body 64 bytes on) by the
 * HEK at name, in the package whose stash is at hv (body 64 bytes on) named by pkg, defined
 * in file.
 */
static void sub_at(uint8_t *sv, uint8_t *gv, uint8_t *name, uint8_t *hv, uint8_t *pkg,
                   const char *file)
{
	sv_at(sv, sv + 128, SVT_PVCV);
	put64(sv + 128 + CV_GV, (uint64_t)gv);
	put64(sv + 128 + CV_FILE, (uint64_t)file);
	sv_at(gv, gv + 64, SVT_PVGV | SVPGV_GP);
	put64(gv + 64 + GV_NAME, (uint64_t)name);
	put64(gv + 64 + GV_STASH, (uint64_t)hv);
	sv_at(hv, hv + 64, SVT_PVHV | SVF_OOK);
	put64(hv + 64 + HV_NAME, (uint64_t)pkg);
}

/* Context entry ix of cxstack: a sub's, at line of cop, the next one out at subix. */
static void cx_at(uint8_t *cxstack, int ix, uint8_t *cv, uint8_t *cop, int32_t subix)
{
	uint8_t *cx = cxstack + CX_SIZE * ix;

	cx[CX_TYPE] = CXT_SUB;
	put64(cx + CX_OLDCOP, (uint64_t)cop);
	put64(cx + CX_RETOP, 1); /* called from Perl: the walk goes on */
	put32(cx + CX_SUBIX, (uint32_t)subix);
	put64(cx + CX_CV, (uint64_t)cv);
}

/* A stackinfo at si over cxstack, its top entry top, its innermost sub's sub. */
static void si_at(uint8_t *si, uint8_t *cxstack, uint8_t *prev, int32_t top, int32_t sub)
{
	put64(si + SI_CXSTACK, (uint64_t)cxstack);
	put64(si + SI_PREV, (uint64_t)prev);
	put32(si + SI_CXIX, (uint32_t)top);
	put32(si + SI_CXSUBIX, (uint32_t)sub);
}

static void setup(void)
{
	pthread_key_t key;
	uint8_t *si = arena, *cxstack = arena + 1024, *cop = arena + 4096, *svs = arena + 8192,
		*heks = arena + 32768;
	static const char file[] = "/fake.pl";

	if (pthread_key_create(&key, NULL))
		exit(1);
	PL_thr_key = (unsigned int)key;
	pthread_setspecific(key, interp);

	put32(cop + COP_LINE, 7);
	put64(cop + COP_FILE, (uint64_t)file);
	put64(interp + I_CURCOP, (uint64_t)cop);
	if (!strcmp(mode, "cycle")) {
		hek_at(heks, "cyc", 3);
		hek_at(heks + 64, "Cycle", 5);
		sub_at(svs, svs + 512, heks, svs + 1024, heks + 64, file);
		cx_at(cxstack, 0, svs, cop, -1);
		si_at(si, cxstack, si, 0, 0);
	} else if (!strcmp(mode, "unmapped")) {
		/* A stackinfo nowhere has no Perl frames (the walk finds none to start from);
		 * entries nowhere are frames that cannot be read. */
		si_at(si, (uint8_t *)0x10000, NULL, 3, 3);
	} else if (!strcmp(mode, "garbage") || !strcmp(mode, "churn")) {
		fill_arena();
		/* The stackinfo's entries lie within the arena, to be read. */
		si_at(si, cxstack, NULL, 20, 20);
	} else if (!strcmp(mode, "forged")) {
		/* Eight subs, each lying differently; entry 7 the innermost, entry 0 (the last
		 * the walk reaches) of no known type. */
		static const char *const names[8] = {"typeless",    "huge",     "neg",
		                                     "wrong_gv",    "nameless", "lost_file",
		                                     "forged_name", "not_a_cv"};

		hek_at(heks, "Forged", 6);
		for (int i = 0; i < 8; i++) {
			uint8_t *sv = svs + 2048 * i, *name = heks + 128 * (i + 1);

			hek_at(name, names[i], (int32_t)strlen(names[i]));
			sub_at(sv, sv + 512, name, sv + 1024, heks, file);
			cx_at(cxstack, i, sv, cop, i - 1);
		}
		cxstack[CX_TYPE] = 5;                              /* a loop's entry */
		put32(heks + 128 * 2 + HEK_LEN, 1u << 30);         /* a huge length */
		put32(heks + 128 * 3 + HEK_LEN, (uint32_t)-5);     /* a negative one */
		put32(svs + 2048 * 3 + 512 + SV_FLAGS, SVT_PVHV);  /* its GV no GV */
		put32(svs + 2048 * 4 + 1024 + SV_FLAGS, SVT_PVHV); /* its stash without a name */
		put64(svs + 2048 * 5 + 128 + CV_FILE, 0x10000);    /* its file where nothing is */
		put32(svs + 2048 * 7 + SV_FLAGS, SVT_PVGV);        /* not a CV */
		si_at(si, cxstack, NULL, 7, 7);
	}
	put64(interp + I_CURSTACKINFO, (uint64_t)si);
}

/* churn: entries point at random CVs and entries, CVs are rewritten. */
static void *churn(void *arg)
{
	(void)arg;
	while (!stop) {
		uint8_t *cx = arena + 1024 + CX_SIZE * (rnd() % 21);

		put32(cx + CX_SUBIX, (uint32_t)(rnd() % 24) - 2);
		put64(cx + CX_CV, (uint64_t)(arena + 8192 + 128 * (rnd() % 128)));
		cx[CX_TYPE] = (uint8_t)(CXT_SUB + rnd() % 3);
		arena[8192 + rnd() % 24576] = (uint8_t)rnd();
		put64(arena + SI_PREV, rnd() % 4 ? 0 : (uint64_t)arena);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	/* The stackinfo at the arena's start stays: its entries are what garbage rewrites. */
	return fake_main(argc, argv, setup, churn, Perl_runops_standard, 1024);
}
