/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemons' meeting point: a SOCK_SEQPACKET socket in the collector's
 * runtime directory (never an abstract socket, which any process in the
 * network namespace could squat on). The collector listens and checks each
 * peer's credentials; the symbolizer connects.
 */
#ifndef EMBER_IPC_ENDPOINT_H
#define EMBER_IPC_ENDPOINT_H

#include <sys/types.h>

#define EMBER_RUNTIME_DIR "/run/ember"
#define EMBER_SOCKET_NAME "collector.sock"

struct ember_peer_cred {
	pid_t pid;
	uid_t uid;
	gid_t gid;
};

/*
 * Listens at path, replacing a socket left by an earlier run. The socket is
 * owned by root and the given group, mode 0660; the directory must exist.
 * Its connections take no descriptors (ember_endpoint_refuse_fds).
 * Returns the listening descriptor (non-blocking) or a negative errno.
 */
int ember_endpoint_listen(const char *path, gid_t gid);

/* Connects to path. Returns the descriptor or a negative errno (-ENOENT,
 * -ECONNREFUSED while no collector listens). */
int ember_endpoint_connect(const char *path);

/*
 * Makes the kernel refuse descriptors sent to sock (SO_PASSRIGHTS 0, Linux 6.16;
 * inherited by the connections a listening socket accepts). A descriptor that
 * arrives anyway must be closed by the receiver, and its last close runs there:
 * a socket lingering on unsent data, say, would block the receiver for as long
 * as the sender chose. Returns 0 or a negative errno (-ENOPROTOOPT on older
 * kernels: receivers then still refuse, by closing).
 */
int ember_endpoint_refuse_fds(int sock);

/* The credentials the kernel recorded for the peer when it connected. */
int ember_endpoint_peer(int sock, struct ember_peer_cred *out);

#endif
