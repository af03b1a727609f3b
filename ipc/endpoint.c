// SPDX-License-Identifier: Apache-2.0
#include "ipc/endpoint.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "shared/cleanup.h"
#include "shared/err.h"

#ifndef SO_PASSRIGHTS
#define SO_PASSRIGHTS 83
#endif

static int make_addr(const char *path, struct sockaddr_un *a)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (!path[0] || strlen(path) >= sizeof(a->sun_path))
		return -ENAMETOOLONG;
	memcpy(a->sun_path, path, strlen(path));
	return 0;
}

int ember_endpoint_listen(const char *path, gid_t gid)
{
	struct sockaddr_un a;
	struct stat st;
	_cleanup_close_ int fd = -1;
	int err = make_addr(path, &a);

	if (err)
		return err;
	/* Replace only a socket: never remove some other file by mistake. */
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		if (unlink(path) < 0)
			return neg_errno();
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return neg_errno();
	/* Before listen(): a peer can send as soon as it is connected, accepted or not. */
	ember_endpoint_refuse_fds(fd);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || chown(path, 0, gid) < 0 ||
	    chmod(path, 0660) < 0 || listen(fd, 4) < 0)
		return neg_errno();
	return TAKE_FD(fd);
}

int ember_endpoint_connect(const char *path)
{
	struct sockaddr_un a;
	_cleanup_close_ int fd = -1;
	int err = make_addr(path, &a);

	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return neg_errno();
	return TAKE_FD(fd);
}

int ember_endpoint_refuse_fds(int sock)
{
	int off = 0;

	return setsockopt(sock, SOL_SOCKET, SO_PASSRIGHTS, &off, sizeof(off)) < 0 ? neg_errno() : 0;
}

int ember_endpoint_peer(int sock, struct ember_peer_cred *out)
{
	struct ucred c;
	socklen_t len = sizeof(c);

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &c, &len) < 0)
		return neg_errno();
	if (len != sizeof(c))
		return -EPROTO;
	*out = (struct ember_peer_cred){c.pid, c.uid, c.gid};
	return 0;
}
