// SPDX-License-Identifier: Apache-2.0
#include "ipc/proto.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "shared/cleanup.h"
#include "shared/err.h"

#define MAX_PASSED_FDS 4

static const struct {
	const char *name;
	size_t size;  /* exactly; or, with least, at most */
	size_t least; /* 0: the size is exact */
} msg_types[EMBER_MSG_TYPE_MAX] = {
    [EMBER_MSG_HELLO] = {"HELLO", sizeof(struct ember_msg_hello), 0},
    [EMBER_MSG_WELCOME] = {"WELCOME", sizeof(struct ember_msg_welcome), 0},
    [EMBER_MSG_REJECT] = {"REJECT", sizeof(struct ember_msg_reject), 0},
    [EMBER_MSG_BROKER_REQ] = {"BROKER_REQ", sizeof(struct ember_msg_broker_req), 0},
    [EMBER_MSG_BROKER_REPLY] = {"BROKER_REPLY", sizeof(struct ember_msg_broker_reply), 0},
    [EMBER_MSG_FLUSH] = {"FLUSH", sizeof(struct ember_msg_flush), 0},
    [EMBER_MSG_FLUSHED] = {"FLUSHED", sizeof(struct ember_msg_flushed), 0},
    [EMBER_MSG_UNWIND_TABLE] = {"UNWIND_TABLE", sizeof(struct ember_msg_unwind_table), 0},
    [EMBER_MSG_UNWIND_ROWS] = {"UNWIND_ROWS", sizeof(struct ember_msg_unwind_rows), 0},
    [EMBER_MSG_UNWIND_PROC] = {"UNWIND_PROC", sizeof(struct ember_msg_unwind_proc), 0},
    [EMBER_MSG_UNWIND_FILE] = {"UNWIND_FILE", sizeof(struct ember_msg_unwind_file), 0},
    [EMBER_MSG_DRAIN] = {"DRAIN", sizeof(struct ember_msg_hdr), 0},
    [EMBER_MSG_INTERP_ROW] = {"INTERP_ROW", sizeof(struct ember_msg_interp_row),
                              EMBER_MSG_INTERP_ROW_HEADER},
};
_Static_assert(sizeof(struct ember_msg_unwind_rows) <= EMBER_MSG_MAX, "fits a message");
_Static_assert(sizeof(struct ember_msg_unwind_proc) <= EMBER_MSG_MAX, "fits a message");
_Static_assert(sizeof(struct ember_msg_interp_row) <= EMBER_MSG_MAX, "fits a message");

size_t ember_msg_size(uint16_t type)
{
	return type < EMBER_MSG_TYPE_MAX ? msg_types[type].size : 0;
}

const char *ember_msg_type_name(uint16_t type)
{
	return type < EMBER_MSG_TYPE_MAX && msg_types[type].name ? msg_types[type].name : "UNKNOWN";
}

void ember_msg_init(union ember_msg *m, enum ember_msg_type type, uint32_t seq)
{
	size_t size = ember_msg_size((uint16_t)type);

	memset(m, 0, size ? size : sizeof(m->hdr));
	m->hdr.magic = EMBER_PROTO_MAGIC;
	m->hdr.version = EMBER_PROTO_VERSION;
	m->hdr.type = (uint16_t)type;
	m->hdr.length = (uint32_t)size;
	m->hdr.seq = seq;
}

void ember_msg_init_from(union ember_msg *m, enum ember_msg_type type, uint32_t seq,
                         const void *body)
{
	ember_msg_init(m, type, seq);
	if (m->hdr.length > sizeof(m->hdr)) /* not for an unknown type (length 0) */
		memcpy(m->bytes + sizeof(m->hdr), (const char *)body + sizeof(m->hdr),
		       m->hdr.length - sizeof(m->hdr));
}

void ember_msg_broker_reply(union ember_msg *m, uint32_t seq, uint32_t id, int fd,
                            const struct ember_broker_file *f)
{
	ember_msg_init(m, EMBER_MSG_BROKER_REPLY, seq);
	m->broker_reply.id = id;
	m->broker_reply.error = fd < 0 ? fd : 0;
	m->broker_reply.file = *f;
}

int ember_msg_interp_row(union ember_msg *m, uint32_t pid, uint32_t runtime, uint32_t op,
                         const void *row, size_t row_size)
{
	if (row_size > sizeof(m->interp_row.row))
		return -EINVAL;
	ember_msg_init(m, EMBER_MSG_INTERP_ROW, 0);
	m->interp_row.pid = pid;
	m->interp_row.runtime = runtime;
	m->interp_row.op = op;
	if (row_size)
		memcpy(m->interp_row.row, row, row_size);
	m->hdr.length = (uint32_t)(EMBER_MSG_INTERP_ROW_HEADER + row_size);
	return 0;
}

int ember_msg_validate(const union ember_msg *m, size_t len)
{
	size_t most, least;

	if (len < sizeof(m->hdr))
		return -EBADMSG;
	if (m->hdr.magic != EMBER_PROTO_MAGIC || m->hdr.version != EMBER_PROTO_VERSION)
		return -EPROTO;
	most = ember_msg_size(m->hdr.type);
	least = most ? msg_types[m->hdr.type].least : 0;
	if (!most || len > most || len < (least ? least : most) || m->hdr.length != len)
		return -EBADMSG;
	return 0;
}

int ember_msg_send(int sock, const union ember_msg *m, const int *fds, int nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * MAX_PASSED_FDS)];
	struct iovec iov = {.iov_base = (void *)m, .iov_len = m->hdr.length};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	if (nfds < 0 || nfds > MAX_PASSED_FDS || m->hdr.length > sizeof(*m))
		return -EINVAL;
	if (nfds > 0) {
		struct cmsghdr *c;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return neg_errno();
	return n == (ssize_t)m->hdr.length ? 0 : -EIO;
}

int ember_msg_recv(int sock, union ember_msg *m, int *fds, int max_fds, int *nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * MAX_PASSED_FDS)];
	struct iovec iov = {.iov_base = m, .iov_len = sizeof(*m)};
	struct msghdr mh = {
	    .msg_iov = &iov,
	    .msg_iovlen = 1,
	    .msg_control = cbuf,
	    .msg_controllen = sizeof(cbuf),
	};
	int got = 0, err = 0;
	ssize_t n;

	*nfds = 0;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : neg_errno();
	if (n == 0)
		return -ECONNRESET;

	/* Take every descriptor out of the message, whether or not we keep it. */
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		size_t count;
		int *in;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
			err = -EPROTO;
			continue;
		}
		count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		in = (int *)CMSG_DATA(c);
		for (size_t i = 0; i < count; i++) {
			int fd;

			memcpy(&fd, &in[i], sizeof(fd));
			if (got < max_fds)
				fds[got++] = fd;
			else {
				close(fd);
				err = -EPROTO;
			}
		}
	}
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		err = -EBADMSG;
	if (!err)
		err = ember_msg_validate(m, (size_t)n);
	if (err) {
		for (int i = 0; i < got; i++)
			fds[i] = ember_safe_close(fds[i]);
		return err;
	}
	*nfds = got;
	return 0;
}
