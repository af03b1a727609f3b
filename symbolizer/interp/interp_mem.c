// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/interp_mem.h"

#include <errno.h>
#include <unistd.h>

#include "bpf/interp.h"
#include "symbolizer/client/reader.h"

void ember_interp_mem_init(struct ember_interp_mem *m, uint32_t pid)
{
	*m = (struct ember_interp_mem){.pid = pid, .fd = -1};
}

int ember_interp_mem_open(struct ember_interp_mem *m, struct ember_broker_client *broker,
                          uint64_t now_ns)
{
	int fd;

	if (m->fd >= 0)
		return 0;
	if (m->gone)
		return -ESRCH;
	if (m->error && now_ns < m->retry_ns)
		return m->error;
	fd = ember_broker_request(broker, EMBER_BROKER_MEM, m->pid, 0, NULL);
	if (fd < 0) {
		m->error = fd;
		m->retry_ns = now_ns + EMBER_INTERP_MEM_RETRY_NS;
		return fd;
	}
	m->fd = fd;
	m->error = 0;
	m->readers = broker->readers;
	return 0;
}

void ember_interp_mem_close(struct ember_interp_mem *m)
{
	if (m->fd >= 0)
		close(m->fd);
	m->fd = -1;
}

int ember_interp_mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct ember_interp_mem *m = ctx;
	struct ember_read_of of = {m->pid, 0, 0, 0};
	ssize_t n;

	if (m->fd < 0 || addr >= EMBER_INTERP_USER_LIMIT || len > EMBER_INTERP_MEM_MAX_READ)
		return -EFAULT;
	if (!m->readers)
		return pread(m->fd, buf, len, (off_t)addr) == (ssize_t)len ? 0 : -EFAULT;
	for (size_t done = 0; done < len; done += (size_t)n) {
		size_t part = len - done < EMBER_READ_MAX_PREAD ? len - done : EMBER_READ_MAX_PREAD;

		n = ember_readers_pread(m->readers, m->fd, (char *)buf + done, part, addr + done,
		                        &of);
		if (n != (ssize_t)part)
			return -EFAULT;
	}
	return 0;
}
