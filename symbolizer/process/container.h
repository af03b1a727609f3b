/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The container a process runs in, from its /proc/PID/cgroup list (cgroup
 * v1 or v2): Docker, containerd/CRI, CRI-O and Podman name a container's
 * cgroup after its 64-hex-digit id ("/docker/<id>",
 * "/system.slice/docker-<id>.scope", "/kubepods/.../cri-containerd-<id>.scope",
 * "crio-<id>.scope", "libpod-<id>.scope"). The text comes from a profiled
 * host and is treated as hostile: bounded, never trusted to be well formed.
 */
#ifndef EMBER_SYMBOLIZER_PROCESS_CONTAINER_H
#define EMBER_SYMBOLIZER_PROCESS_CONTAINER_H

#include <stddef.h>

#define EMBER_CONTAINER_ID_LEN 64

/*
 * Finds the container id in len bytes of cgroup text (NUL bytes allowed).
 * Returns 1 and the lowercase id in out (NUL-terminated), or 0 when the
 * process is in no container (out is then "").
 */
int ember_container_id_from_cgroup(const char *text, size_t len,
                                   char out[EMBER_CONTAINER_ID_LEN + 1]);

#endif
