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
 * Returns the listening descriptor (non-blocking) or a negative errno.
 */
int ember_endpoint_listen(const char *path, gid_t gid);

/* Connects to path. Returns the descriptor or a negative errno (-ENOENT,
 * -ECONNREFUSED while no collector listens). */
int ember_endpoint_connect(const char *path);

/* The credentials the kernel recorded for the peer when it connected. */
int ember_endpoint_peer(int sock, struct ember_peer_cred *out);

#endif
