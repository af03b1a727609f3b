// SPDX-License-Identifier: Apache-2.0
#include "ipc/config_fd.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared/cleanup.h"
#include "shared/err.h"

#define CONFIG_SEALS (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

int ember_config_fd_create(const void *data, size_t size)
{
	_cleanup_close_ int fd = memfd_create("ember-config", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	size_t off = 0;

	if (fd < 0)
		return neg_errno();
	while (off < size) {
		ssize_t n = write(fd, (const char *)data + off, size - off);

		if (n < 0 && errno != EINTR)
			return neg_errno();
		off += n > 0 ? (size_t)n : 0;
	}
	if (fcntl(fd, F_ADD_SEALS, CONFIG_SEALS) < 0)
		return neg_errno();
	return TAKE_FD(fd);
}

int ember_config_fd_read(int fd, uint32_t kind, uint32_t version, void *out, size_t size)
{
	const struct ember_config_hdr *h = out;
	struct stat st;
	size_t off = 0;
	int seals = fcntl(fd, F_GET_SEALS);

	if (fstat(fd, &st) < 0)
		return -EBADF;
	/* Sealed (only a memfd can be): the bytes read below are the bytes checked later. */
	if (seals < 0 || (seals & CONFIG_SEALS) != CONFIG_SEALS || !S_ISREG(st.st_mode))
		return -EPERM;
	if ((uint64_t)st.st_size != size || size < sizeof(*h))
		return -EMSGSIZE;
	while (off < size) {
		ssize_t n = pread(fd, (char *)out + off, size - off, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? neg_errno() : -EMSGSIZE;
		off += (size_t)n;
	}
	if (h->magic != EMBER_CONFIG_MAGIC || h->kind != kind || h->version != version)
		return -EPROTO;
	return h->size == size ? 0 : -EMSGSIZE;
}

bool ember_config_fd_ok(int32_t fd)
{
	return fd >= EMBER_CONFIG_FIRST_FD && fcntl(fd, F_GETFD) >= 0;
}
