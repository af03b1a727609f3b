// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/php_elf.h"

#include <errno.h>
#include <libelf.h>
#include <string.h>

#define POWERED_BY "X-Powered-By: PHP/"

enum wanted { W_GLOBALS, W_EXECUTE_EX, W_GLOBALS_OFFSET, W_COUNT };

static const char *const wanted_names[W_COUNT] = {
    [W_GLOBALS] = "executor_globals",
    [W_EXECUTE_EX] = "execute_ex",
    [W_GLOBALS_OFFSET] = "executor_globals_offset",
};

/* A number of at most 3 digits at buf[*at], moved past; -1 without one. */
static int parse_number(const uint8_t *buf, size_t len, size_t *at)
{
	int n = 0, digits = 0;

	for (; *at < len && buf[*at] >= '0' && buf[*at] <= '9' && digits < 4; (*at)++, digits++)
		n = n * 10 + (buf[*at] - '0');
	return digits && digits < 4 ? n : -1;
}

int ember_php_parse_version(const uint8_t *buf, size_t len, unsigned int v[3])
{
	const uint8_t *p = memmem(buf, len, POWERED_BY, sizeof(POWERED_BY) - 1);
	size_t at;

	if (!p)
		return -ENOENT;
	at = (size_t)(p - buf) + sizeof(POWERED_BY) - 1;
	for (int i = 0; i < 3; i++) {
		int n = parse_number(buf, len, &at);

		if (n < 0 || (i < 2 && (at >= len || buf[at++] != '.')))
			return -ENOENT;
		v[i] = (unsigned int)n;
	}
	return 0;
}

static void php_facts(const struct ember_elf_image *f, const struct ember_elf_sym *syms,
                      struct ember_php_elf *out)
{
	const struct ember_elf_sym *ex = &syms[W_EXECUTE_EX], *eg = &syms[W_GLOBALS];
	unsigned int v[3];

	out->kind = EMBER_PHP_ELF_UNSUPPORTED;
	if (ember_php_parse_version(f->image, f->len, v)) {
		out->why = "its version cannot be found (no X-Powered-By string)";
		return;
	}
	if (ember_php_layout_for(v[0], v[1], &out->layout)) {
		out->why = "a PHP version ember has no layout for (ember reads PHP 8.2)";
		return;
	}
	out->release = v[2];
	if (!eg->addr || syms[W_GLOBALS_OFFSET].addr) {
		out->why = "a thread-safe (ZTS) build keeps its executor globals per thread "
			   "(ember reads non-thread-safe builds only)";
		return;
	}
	if (eg->type != STT_OBJECT || eg->size < out->layout.eg_current_ex + 8u ||
	    !ember_elf_image_in_segment(f, eg->addr, PF_W)) {
		out->why = "its executor_globals is not a global of the expected size";
		return;
	}
	out->executor_globals = eg->addr;
	if (ember_elf_function_range(f, ex, EMBER_PHP_MAX_LOOP, out->loop)) {
		out->why = "its interpreter loop (execute_ex) cannot be found";
		return;
	}
	out->kind = EMBER_PHP_ELF_PHP;
}

static int read_elf(Elf *elf, void *facts)
{
	struct ember_php_elf *out = facts;
	struct ember_elf_image f;
	struct ember_elf_sym syms[W_COUNT];
	int err;

	memset(out, 0, sizeof(*out));
	err = ember_elf_image_start(elf, &f, out->segs, &out->nsegs, wanted_names, W_COUNT, syms);
	if (err)
		return err;
	/* The engine's loop is what makes a file PHP's; the rest says whether ember can walk it. */
	if (syms[W_EXECUTE_EX].addr)
		php_facts(&f, syms, out);
	return 0;
}

int ember_php_elf_read(int fd, struct ember_php_elf *out)
{
	return ember_elf_read_fd(fd, read_elf, out);
}

int ember_php_elf_read_mem(const void *image, size_t len, struct ember_php_elf *out)
{
	return ember_elf_read_memory(image, len, read_elf, out);
}
