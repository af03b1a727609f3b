/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the generated policy tables see: the rule structs and every header
 * whose constants a .policy file may use in a condition.
 */
#ifndef EMBER_SECCOMP_POLICY_CONSTS_H
#define EMBER_SECCOMP_POLICY_CONSTS_H

#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/futex.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>

#include "seccomp/policy.h"

#endif
