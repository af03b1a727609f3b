// SPDX-License-Identifier: Apache-2.0
/*
 * A FUSE file system that stops answering on demand, for test_stall.py.
 *
 *   stallfs MOUNTPOINT CONTROL MAX_SECONDS NAME=BACKING...
 *
 * Serves a flat directory of read-only files, each a copy of a backing file
 * (an executable, a shared library). CONTROL is a file of operation names
 * (getattr open read statfs, or all): a request for a listed operation waits
 * without an answer until the name is gone from CONTROL, then is answered as
 * usual; so a file system that stalls can also recover. No request waits
 * longer than MAX_SECONDS, whatever happens to the test. Pages are kept in the
 * cache across opens (keep_cache): a mapping made before a stall keeps its
 * pages, and only what nobody has read yet needs the daemon.
 *
 * Mounted with allow_other (the test runs as root), in the foreground; the
 * test aborts the connection (/sys/fs/fuse/connections/N/abort) and unmounts
 * it when it is done, so a stalled request never outlives a test.
 */
#define FUSE_USE_VERSION 31

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define MAX_FILES 8

struct served {
	const char *name;
	int fd;
	struct stat st;
};

static struct served files[MAX_FILES];
static int nfiles;
static const char *control_path;
static double max_stall_s;

/* Whether CONTROL lists op (or "all"). */
static bool stalled(const char *op)
{
	char buf[256], *tok, *save = NULL;
	int fd = open(control_path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	for (tok = strtok_r(buf, " \t\n,", &save); tok; tok = strtok_r(NULL, " \t\n,", &save))
		if (!strcmp(tok, op) || !strcmp(tok, "all"))
			return true;
	return false;
}

/* Holds the request while op is stalled; it is answered once the test lets go. */
static void maybe_stall(const char *op)
{
	struct timespec ts = {0, 20 * 1000000L};

	for (double waited = 0; waited < max_stall_s && stalled(op); waited += 0.02)
		nanosleep(&ts, NULL);
}

static struct served *find(const char *path)
{
	for (int i = 0; i < nfiles; i++)
		if (path[0] == '/' && !strcmp(path + 1, files[i].name))
			return &files[i];
	return NULL;
}

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct served *f;

	(void)fi;
	maybe_stall("getattr");
	memset(st, 0, sizeof(*st));
	if (!strcmp(path, "/")) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	f = find(path);
	if (!f)
		return -ENOENT;
	st->st_mode = S_IFREG | 0755;
	st->st_nlink = 1;
	st->st_size = f->st.st_size;
	st->st_mtim = f->st.st_mtim;
	return 0;
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)off;
	(void)fi;
	(void)flags;
	if (strcmp(path, "/"))
		return -ENOENT;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	for (int i = 0; i < nfiles; i++)
		fill(buf, files[i].name, NULL, 0, 0);
	return 0;
}

static int fs_open(const char *path, struct fuse_file_info *fi)
{
	maybe_stall("open");
	if (!find(path))
		return -ENOENT;
	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		return -EROFS;
	fi->keep_cache = 1;
	return 0;
}

static int fs_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct served *f = find(path);
	ssize_t n;

	(void)fi;
	maybe_stall("read");
	if (!f)
		return -ENOENT;
	n = pread(f->fd, buf, size, off);
	return n < 0 ? -errno : (int)n;
}

static int fs_statfs(const char *path, struct statvfs *st)
{
	(void)path;
	maybe_stall("statfs");
	memset(st, 0, sizeof(*st));
	st->f_bsize = 4096;
	st->f_namemax = 255;
	return 0;
}

static const struct fuse_operations ops = {
    .getattr = fs_getattr,
    .readdir = fs_readdir,
    .open = fs_open,
    .read = fs_read,
    .statfs = fs_statfs,
};

int main(int argc, char **argv)
{
	char *fuse_argv[] = {argv[0], "-f", "-o", "allow_other,ro,fsname=stallfs", NULL, NULL};

	if (argc < 5 || argc - 4 > MAX_FILES) {
		fprintf(
		    stderr,
		    "usage: stallfs MOUNTPOINT CONTROL MAX_SECONDS NAME=BACKING... (at most %d)\n",
		    MAX_FILES);
		return 2;
	}
	control_path = argv[2];
	max_stall_s = atof(argv[3]);
	for (int i = 4; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		struct served *f = &files[nfiles++];

		if (!eq || eq == argv[i]) {
			fprintf(stderr, "stallfs: %s: want NAME=BACKING\n", argv[i]);
			return 2;
		}
		*eq = '\0';
		f->name = argv[i];
		f->fd = open(eq + 1, O_RDONLY | O_CLOEXEC);
		if (f->fd < 0 || fstat(f->fd, &f->st) < 0) {
			perror(eq + 1);
			return 1;
		}
	}
	fuse_argv[4] = argv[1];
	return fuse_main(5, fuse_argv, &ops, NULL);
}
