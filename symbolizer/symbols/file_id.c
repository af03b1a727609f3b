// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/symbols/file_id.h"

#include <errno.h>
#include <sodium.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK 4096

void ember_hex(const uint8_t *bytes, size_t len, char *hex)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		hex[2 * i] = digits[bytes[i] >> 4];
		hex[2 * i + 1] = digits[bytes[i] & 15];
	}
	hex[2 * len] = '\0';
}

static void finish(crypto_hash_sha256_state *st, uint64_t size, struct ember_file_id *out)
{
	uint8_t be[8], digest[crypto_hash_sha256_BYTES];

	for (int i = 0; i < 8; i++)
		be[i] = (uint8_t)(size >> (56 - 8 * i));
	crypto_hash_sha256_update(st, be, sizeof(be));
	crypto_hash_sha256_final(st, digest);
	memcpy(out->hash, digest, EMBER_FILE_HASH_BYTES);
	ember_hex(out->hash, EMBER_FILE_HASH_BYTES, out->hash_hex);
	out->size = size;
}

static int read_full(int fd, uint8_t *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO; /* the file shrank under us */
		done += (size_t)n;
	}
	return 0;
}

int ember_file_id_fd(int fd, struct ember_file_id *out)
{
	crypto_hash_sha256_state st;
	uint8_t buf[CHUNK];
	struct stat sb;
	uint64_t size, n;
	int err;

	if (fstat(fd, &sb) < 0)
		return -errno;
	if (!S_ISREG(sb.st_mode))
		return -EINVAL;
	size = (uint64_t)sb.st_size;
	crypto_hash_sha256_init(&st);
	n = size < CHUNK ? size : CHUNK;
	if ((err = read_full(fd, buf, n, 0)))
		return err;
	crypto_hash_sha256_update(&st, buf, n);
	if ((err = read_full(fd, buf, n, size - n)))
		return err;
	crypto_hash_sha256_update(&st, buf, n);
	finish(&st, size, out);
	return 0;
}

int ember_file_id_mem(const void *data, size_t len, struct ember_file_id *out)
{
	crypto_hash_sha256_state st;
	size_t n = len < CHUNK ? len : CHUNK;

	crypto_hash_sha256_init(&st);
	crypto_hash_sha256_update(&st, data, n);
	crypto_hash_sha256_update(&st, (const uint8_t *)data + len - n, n);
	finish(&st, len, out);
	return 0;
}
