// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the control socket's message check (ipc/proto.c), the first thing the
 * collector (root) does with what the symbolizer sends. Each input is one packet:
 * ember_msg_validate, and ember_msg_recv on it after it crossed a SEQPACKET socket (alone,
 * then with a descriptor beside it), must agree with the protocol as proto.h states it,
 * written here on its own: magic, version, a known type, exactly that type's size, the
 * header's length that size; a descriptor the receiver does not take is closed and refused.
 * What is accepted is received byte for byte as sent.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ipc/proto.h"

/* The size of each message type the protocol has; 0: no such type. */
static size_t spec_size(uint16_t type)
{
	switch (type) {
	case EMBER_MSG_HELLO:
		return sizeof(struct ember_msg_hello);
	case EMBER_MSG_WELCOME:
		return sizeof(struct ember_msg_welcome);
	case EMBER_MSG_REJECT:
		return sizeof(struct ember_msg_reject);
	case EMBER_MSG_BROKER_REQ:
		return sizeof(struct ember_msg_broker_req);
	case EMBER_MSG_BROKER_REPLY:
		return sizeof(struct ember_msg_broker_reply);
	case EMBER_MSG_FLUSH:
		return sizeof(struct ember_msg_flush);
	case EMBER_MSG_FLUSHED:
		return sizeof(struct ember_msg_flushed);
	case EMBER_MSG_UNWIND_TABLE:
		return sizeof(struct ember_msg_unwind_table);
	case EMBER_MSG_UNWIND_ROWS:
		return sizeof(struct ember_msg_unwind_rows);
	case EMBER_MSG_UNWIND_PROC:
		return sizeof(struct ember_msg_unwind_proc);
	case EMBER_MSG_UNWIND_FILE:
		return sizeof(struct ember_msg_unwind_file);
	case EMBER_MSG_INTERP_ROW: /* its largest: a runtime's row may be shorter */
		return sizeof(struct ember_msg_interp_row);
	case EMBER_MSG_DRAIN: /* the header alone */
		return sizeof(struct ember_msg_hdr);
	default:
		return 0;
	}
}

static bool spec_valid(const uint8_t *d, size_t n)
{
	struct ember_msg_hdr h;

	if (n < sizeof(h) || n > EMBER_MSG_MAX)
		return false;
	memcpy(&h, d, sizeof(h));
	if (h.type == EMBER_MSG_INTERP_ROW) /* a header, then 0 to EMBER_INTERP_MAX_ROW bytes */
		return h.magic == EMBER_PROTO_MAGIC && h.version == EMBER_PROTO_VERSION &&
		       n >= offsetof(struct ember_msg_interp_row, row) &&
		       n <= sizeof(struct ember_msg_interp_row) && h.length == n;
	return h.magic == EMBER_PROTO_MAGIC && h.version == EMBER_PROTO_VERSION &&
	       spec_size(h.type) == n && h.length == n;
}

static void finding(const char *what)
{
	fprintf(stderr, "fuzz_proto: %s\n", what);
	abort();
}

/* The lowest descriptor number free now: what the next one received would get. */
static int lowest_free_fd(void)
{
	int fd = dup(0);

	if (fd >= 0)
		close(fd);
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int sv[2] = {-1, -1}, devnull = -1;
	bool want = spec_valid(data, size);
	union ember_msg m;
	int fds[4], nfds, err;

	if (sv[0] < 0 && (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) ||
	                  (devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0))
		finding("no socketpair or /dev/null");
	if (size <= sizeof(m)) {
		memset(&m, 0x5a, sizeof(m));
		memcpy(&m, data, size);
		if ((ember_msg_validate(&m, size) == 0) != want)
			finding(want ? "ember_msg_validate refused a valid message"
			             : "ember_msg_validate accepted an invalid message");
	}
	if (!size || size > 2 * EMBER_MSG_MAX)
		return 0;
	/* Across the socket, alone: the same verdict, the same bytes. */
	if (send(sv[1], data, size, MSG_DONTWAIT) != (ssize_t)size)
		finding("cannot send");
	err = ember_msg_recv(sv[0], &m, fds, 4, &nfds);
	if ((err == 0) != want)
		finding(want ? "ember_msg_recv refused a valid message"
		             : "ember_msg_recv accepted an invalid message");
	if (!err && (nfds || memcmp(&m, data, size)))
		finding("ember_msg_recv changed what was sent");
	/* With a descriptor, to a receiver that takes none: refused, and not left open. */
	{
		char cbuf[CMSG_SPACE(sizeof(int))] = {0};
		struct iovec iov = {.iov_base = (void *)data, .iov_len = size};
		struct msghdr mh = {.msg_iov = &iov,
		                    .msg_iovlen = 1,
		                    .msg_control = cbuf,
		                    .msg_controllen = sizeof(cbuf)};
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		int free_before = lowest_free_fd();

		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &devnull, sizeof(int));
		if (sendmsg(sv[1], &mh, MSG_DONTWAIT) != (ssize_t)size)
			finding("cannot send with a descriptor");
		if (ember_msg_recv(sv[0], &m, NULL, 0, &nfds) == 0)
			finding("a message with a descriptor was accepted");
		if (lowest_free_fd() != free_before)
			finding("a descriptor sent along was left open");
	}
	return 0;
}
