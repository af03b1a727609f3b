/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HotSpot JVM's reader: finds libjvm.so among a process's mappings,
 * reads the running VM's description of itself (jvm_layout.h) once its code
 * heaps are set up, and sends the row its eBPF walker (bpf/jvm.bpf.h) steps
 * through Java frames with. It names the frames the walker recorded: an
 * interpreted frame by its Method (checked against the walker's checksum)
 * and its bytecode's line; a compiled frame by the method its pc runs in
 * (the innermost inlined one, from the nmethod's debug information, checked
 * against the walker's compile id) and that line; a stub by its blob's name.
 * Methods and nmethods are read at sample time (warm): the VM frees and
 * moves them (class unloading, code cache flushes).
 *
 * Statistics: jvm.processes, jvm.frames_{named,interpreted,compiled,stub,
 * stale,unreadable}, markers, reads.
 */
#ifndef EMBER_SYMBOLIZER_INTERP_JVM_H
#define EMBER_SYMBOLIZER_INTERP_JVM_H

#include "symbolizer/interp/interp_ops.h"

#define EMBER_JVM_MAX_FILES     256
#define EMBER_JVM_MAX_TRACKED   EMBER_INTERP_MAX_PROCS
#define EMBER_JVM_CACHE_ENTRIES 65536
#define EMBER_JVM_CACHE_BYTES   (32u << 20)
#define EMBER_JVM_FILE_RETRY_NS (30ull * 1000000000ull) /* a file that could not be opened */
#define EMBER_JVM_VM_RETRY_NS   (500ull * 1000000ull)   /* a VM still starting */
#define EMBER_JVM_MAX_STUB_NAME 64                      /* bytes of a stub's name kept */
#define EMBER_JVM_MAX_PARAMS    512 /* bytes of a method's parameter types (--signatures) */

extern const struct ember_interp_ops ember_jvm_ops;

#endif
