/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `ember check`: what this host and these privileges allow, and what to do
 * about the rest (kernel, BTF, capabilities, the sysctls that limit
 * profiling, and whether the kernel's verifier takes the real sampler).
 *
 * It runs here, in ember-symbolizer, which `ember` execs with it as with
 * report, diff and top, and not in the collector: it is no part of
 * recording, and the collector's code is its trusted base (a diagnostic
 * that no peer or profiled process can reach has no business there). It
 * runs with whatever privileges `ember check` was given (exec keeps root's
 * and ambient capabilities), and it reads only what the kernel says: its
 * version, /proc/sys and this process's capabilities. No hostile input.
 */
#ifndef EMBER_SYMBOLIZER_HOST_CHECK_H
#define EMBER_SYMBOLIZER_HOST_CHECK_H

/* `ember check [--help]`: prints the report; returns an exit code, 0 when recording can work. */
int ember_check_command(int argc, char **argv);

#endif
