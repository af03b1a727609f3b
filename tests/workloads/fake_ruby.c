// SPDX-License-Identifier: Apache-2.0
/*
 * A hostile "interpreter": to ember it looks like CRuby 3.1 from a shared libruby, but the
 * execution context its thread variable names leads to what a compromised process could
 * put there. One file, two builds (test_ruby.py makes both):
 *
 *   gcc -shared -fPIC -DFAKE_RUBY_LIB -o libfake-ruby.so fake_ruby.c
 *       what ember finds libruby by (a file named *ruby*): ruby_api_version, the
 *       general-dynamic thread variable ruby_current_ec (its DTPMOD64 and DTPOFF64
 *       relocations), rb_vm_exec, which calls vm_exec_core, a function of more than 4 KiB
 *       (the largest rb_vm_exec calls, bounded by .eh_frame); vm_exec_core burns the CPU.
 *   gcc -o fake_ruby fake_ruby.c -L. -lfake-ruby -Wl,-rpath,.
 *       fake_ruby MODE SECONDS
 *
 *   cycle     a VM stack of 4,096 control frames, each a method's, all leading to one
 *             method entry and one iseq: past the frame budget
 *   garbage   a VM stack of random bytes, rewritten all the time
 *   unmapped  the VM stack is an address nothing maps
 *   forged    control frames whose iseqs and method entries lie (a body that says
 *             nothing, a body nowhere, a C function's entry that is no method entry)
 *   churn     control frames another thread keeps rewriting
 */
#ifdef FAKE_RUBY_LIB

#include <stdint.h>

const int ruby_api_version[3] = {3, 1, 0};
__thread void *ruby_current_ec;
volatile unsigned long fake_ruby_sink;

/* The interpreter loop: samples land here, and the walker starts. */
__attribute__((noinline)) static void vm_exec_core(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		fake_ruby_sink += i;
	/* Never run: vm_exec_core's size, which is how ember tells it from the rest. */
	__asm__ volatile("jmp 1f\n\t.skip 4608, 0x90\n1:");
}

void rb_vm_exec(unsigned long n)
{
	vm_exec_core(n);
	fake_ruby_sink++; /* no tail call: a call of vm_exec_core */
}

void fake_ruby_set_ec(void *ec)
{
	ruby_current_ec = ec;
}

#else

#include "fake_interp.h"

/* CRuby 3.1's layout (symbolizer/interp/ruby_layout.c, bpf/ruby.h). */
#define EC_VM_STACK      0x00
#define EC_VM_STACK_SIZE 0x08
#define EC_CFP           0x10
#define CFP_SIZE         0x40
#define CFP_PC           0x00
#define CFP_ISEQ         0x10
#define CFP_EP           0x20
#define ISEQ_BODY        0x10
#define BODY_ENCODED     0x08
#define T_IMEMO          0x1au
#define IMEMO_ISEQ       (7u << 12)
#define IMEMO_MENT       (6u << 12)
#define MAGIC_METHOD     0x11110001u
#define MAGIC_CFUNC      0x55550001u
#define FRAMES           4096

void rb_vm_exec(unsigned long n);
void fake_ruby_set_ec(void *ec);

static uint64_t ec[8];
static uint64_t *stack; /* FRAMES control frames (the VM stack's top end) */

/* Control frame i: running iseq at pc, its environment at ep. */
static uint8_t *frame(int i)
{
	return (uint8_t *)stack + CFP_SIZE * i;
}

static void frame_at(int i, uint64_t pc, uint64_t iseq, uint64_t ep)
{
	put64(frame(i) + CFP_PC, pc);
	put64(frame(i) + CFP_ISEQ, iseq);
	put64(frame(i) + CFP_EP, ep);
}

/* An environment at ep: ep[-2] the method entry, ep[0] the frame's flags. */
static void env_at(uint8_t *ep, uint64_t me, uint64_t flags)
{
	put64(ep - 16, me);
	put64(ep, flags);
}

static void setup(void)
{
	uint8_t *iseq = arena, *body = arena + 256, *me = arena + 1024, *ep = arena + 2048 + 16;

	stack = calloc(FRAMES, CFP_SIZE);
	if (!stack)
		exit(1);
	put64(iseq, T_IMEMO | IMEMO_ISEQ);
	put64(iseq + ISEQ_BODY, (uint64_t)body);
	put64(body + BODY_ENCODED, (uint64_t)(body + 512));
	put64(me, T_IMEMO | IMEMO_MENT);
	ec[EC_VM_STACK / 8] = (uint64_t)stack;
	ec[EC_VM_STACK_SIZE / 8] = FRAMES * CFP_SIZE / 8;
	ec[EC_CFP / 8] = (uint64_t)stack;
	if (!strcmp(mode, "cycle")) {
		env_at(ep, (uint64_t)me, MAGIC_METHOD);
		for (int i = 0; i < FRAMES; i++)
			frame_at(i, (uint64_t)(body + 520), (uint64_t)iseq, (uint64_t)ep);
	} else if (!strcmp(mode, "unmapped")) {
		ec[EC_VM_STACK / 8] = ec[EC_CFP / 8] = 0x10000;
	} else if (!strcmp(mode, "garbage") || !strcmp(mode, "churn")) {
		fill_arena();
		for (size_t i = 0; i < FRAMES * CFP_SIZE / 8; i++)
			stack[i] = rnd();
		/* Some frames whose pointers lead into the arena, to be read. */
		for (int i = 0; i < FRAMES; i += 2)
			frame_at(i, (uint64_t)(arena + rnd() % 4096),
			         (uint64_t)(arena + rnd() % 4096),
			         (uint64_t)(arena + 4096 + 8 * (rnd() % 1024)));
	} else if (!strcmp(mode, "forged")) {
		uint8_t *cfunc_ep = ep + 64, *block_ep = ep + 128;

		/* Innermost first: a block's frame (no method entry), a C function's whose entry
		 * is no method entry, a method's whose iseq body says nothing, then one whose iseq
		 * leads to a body nowhere (the walk ends there). */
		env_at(ep, (uint64_t)me, MAGIC_METHOD);
		env_at(cfunc_ep, (uint64_t)(arena + 3072), MAGIC_CFUNC);
		env_at(block_ep, 0, 0x22220001u);
		frame_at(0, (uint64_t)(body + 520), (uint64_t)iseq, (uint64_t)block_ep);
		frame_at(1, 0, 0, (uint64_t)cfunc_ep);
		frame_at(2, (uint64_t)(body + 520), (uint64_t)iseq, (uint64_t)ep);
		frame_at(3, (uint64_t)(body + 520), (uint64_t)(arena + 4000), (uint64_t)ep);
		put64(arena + 4000, T_IMEMO | IMEMO_ISEQ);
		put64(arena + 4000 + ISEQ_BODY, 0x10000);
	}
	fake_ruby_set_ec(ec);
}

/* churn: frames point at random iseqs and environments, the arena is rewritten. */
static void *churn(void *arg)
{
	(void)arg;
	while (!stop) {
		int i = (int)(rnd() % 64);

		frame_at(i, (uint64_t)(arena + rnd() % 4096), (uint64_t)(arena + rnd() % 4096),
		         (uint64_t)(arena + 4096 + 8 * (rnd() % 1024)));
		arena[rnd() % 8192] = (uint8_t)rnd();
		ec[EC_CFP / 8] = (uint64_t)frame((int)(rnd() % 64));
	}
	return NULL;
}

int main(int argc, char **argv)
{
	return fake_main(argc, argv, setup, churn, rb_vm_exec, 0);
}

#endif
