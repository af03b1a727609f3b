/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How the front end (`ember`) hands a program its configuration: one
 * fixed-layout struct in a memfd sealed against every change, at descriptor
 * EMBER_CONFIG_FD of the program it execs. Descriptors the configuration
 * names are passed beside it, from EMBER_CONFIG_FIRST_FD up.
 *
 * The reader copies the bytes into private memory before it looks at them
 * (as ipc/proto.h does with messages), and only from a memfd whose size
 * nobody can change any more: the configuration cannot change under it.
 * Every field is then checked by the struct's own check (core_config.h,
 * symbolizer_config.h); a configuration that fails is refused whole.
 */
#ifndef EMBER_IPC_CONFIG_FD_H
#define EMBER_IPC_CONFIG_FD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EMBER_CONFIG_FD       3
#define EMBER_CONFIG_FIRST_FD 4
#define EMBER_CONFIG_MAGIC    0x46434d45 /* "EMCF" */

/* What every configuration struct starts with. */
struct ember_config_hdr {
	uint32_t magic;
	uint32_t version; /* of the struct: front end and program come from one build */
	uint32_t size;    /* of the whole struct */
	uint32_t kind;    /* which struct: enum ember_config_kind */
};

enum ember_config_kind {
	EMBER_CONFIG_CORE = 1,       /* ember-collector's (core_config.h) */
	EMBER_CONFIG_SYMBOLIZER = 2, /* ember-symbolizer's (symbolizer_config.h) */
};

/* A memfd holding the size bytes at data, sealed against any change. Returns it or -errno. */
int ember_config_fd_create(const void *data, size_t size);

/*
 * Reads the configuration at fd into out (size bytes): fd must be a memfd sealed against
 * writing, growing and shrinking, exactly size bytes long, and start with a header of this
 * kind, version and size. Returns 0, -EBADF (no such descriptor: not started by ember),
 * -EPERM (not sealed), -EMSGSIZE (another size) or -EPROTO (another kind or version).
 */
int ember_config_fd_read(int fd, uint32_t kind, uint32_t version, void *out, size_t size);

/* Whether the array of size bytes holds a NUL (a string that ends inside it). */
static inline int ember_config_str_ok(const char *s, size_t size)
{
	for (size_t i = 0; i < size; i++)
		if (!s[i])
			return 1;
	return 0;
}

#define EMBER_CONFIG_STR_OK(arr) ember_config_str_ok((arr), sizeof(arr))

/* Whether fd is a descriptor passed beside a configuration: above it, and open. */
bool ember_config_fd_ok(int32_t fd);

/* In a configuration's check: fails with -EINVAL and the field's name in *why when bad. */
#define EMBER_CONFIG_REFUSE_IF(bad, reason)                                                        \
	do {                                                                                       \
		if (bad) {                                                                         \
			*why = (reason);                                                           \
			return -EINVAL;                                                            \
		}                                                                                  \
	} while (0)

#endif
