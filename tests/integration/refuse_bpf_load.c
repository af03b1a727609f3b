// SPDX-License-Identifier: Apache-2.0
/*
 * Runs a command with every eBPF program load refused (bpf(BPF_PROG_LOAD)
 * fails with EACCES, as a verifier's refusal does): for the tests of what
 * ember does when its programs cannot load. Usage: refuse_bpf_load CMD ARGS...
 */
#include <errno.h>
#include <linux/bpf.h>
#include <seccomp.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);

	if (argc < 2 || !ctx ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(bpf), 1,
	                     SCMP_A0(SCMP_CMP_EQ, BPF_PROG_LOAD)) ||
	    seccomp_load(ctx))
		return fprintf(stderr, "usage: refuse_bpf_load CMD ARGS... (as root)\n"), 2;
	seccomp_release(ctx);
	execvp(argv[1], argv + 1);
	perror(argv[1]);
	return 127;
}
