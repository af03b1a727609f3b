/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Readable names from mangled symbol names: C++ (Itanium ABI, through the
 * C++ runtime's __cxa_demangle), Rust legacy names (Itanium-like, with the
 * hash suffix dropped) and Rust v0 names (_R...: paths, impls, generic
 * arguments and common types; function pointer and dyn types are not
 * decoded and leave the name mangled). Input is hostile: length and
 * recursion are capped.
 */
#ifndef EMBER_SYMBOLIZER_SYMBOLS_DEMANGLE_H
#define EMBER_SYMBOLIZER_SYMBOLS_DEMANGLE_H

#include <stddef.h>

#define EMBER_DEMANGLE_MAX_INPUT 4096
#define EMBER_DEMANGLE_MAX_DEPTH 64
/* Rust v0 paths and types decoded per name: back references re-decode what
 * they point at, so without a cap a short name costs exponential time. */
#define EMBER_DEMANGLE_MAX_STEPS (1u << 16)
/* C++ back references (substitutions, template and function parameters) per
 * name: each can double what __cxa_demangle prints, which it does without a
 * cap (a 300-byte name printed gigabytes). Real names have fewer than 32 but
 * for one in 10,000; those keep their mangled form. */
#define EMBER_DEMANGLE_MAX_CXX_REFS 32

/*
 * Writes the readable form of name into out (size bytes); a PLT entry's
 * "target@plt" becomes the readable target followed by "@plt". Returns 1 when
 * demangled, 0 when name is not mangled or cannot be decoded (out then holds
 * nothing useful), -ENOSPC when out is too small.
 */
int ember_demangle(const char *name, char *out, size_t size);

#endif
