// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/interp_files.h"

#include <errno.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

struct file_key {
	uint64_t dev, ino;
};

/* A slot: this header, then the runtime's facts. */
struct file_entry {
	struct file_key key;
	int error; /* the file could not be opened or read: retried after retry_ns */
	uint64_t read_ns;
	_Alignas(8) unsigned char facts[];
};

static bool file_eq(const void *ctx, uint32_t slot, const void *key, size_t len)
{
	const struct file_entry *f = ember_slots_at(ctx, slot);

	return len == sizeof(f->key) && !memcmp(&f->key, key, len);
}

int ember_interp_files_init(struct ember_interp_files *f, size_t facts_size, uint32_t max,
                            ember_interp_file_fn read, uint64_t retry_ns)
{
	memset(f, 0, sizeof(*f));
	f->facts_size = facts_size;
	f->read = read;
	f->retry_ns = retry_ns;
	return ember_slots_init(&f->slots, sizeof(struct file_entry) + facts_size, max, file_eq);
}

void ember_interp_files_free(struct ember_interp_files *f)
{
	ember_slots_free(&f->slots);
}

const void *ember_interp_files_get(struct ember_interp_files *f, struct ember_broker_client *broker,
                                   uint32_t pid, const struct ember_maps *maps,
                                   const struct ember_map_entry *e, uint64_t now_ns)
{
	struct file_key key = {makedev(e->dev_major, e->dev_minor), e->inode};
	struct file_entry *fe;
	uint32_t slot;
	int fd, r = ember_slots_add(&f->slots, &key, sizeof(key), &slot);

	if (r == -ENOSPC) {
		/* Full: start over (files are read again as processes need them). */
		for (uint32_t s = 0; s < ember_slots_end(&f->slots); s++) {
			fe = ember_slots_get(&f->slots, s);
			if (fe)
				ember_slots_remove(&f->slots, s, &fe->key, sizeof(fe->key));
		}
		r = ember_slots_add(&f->slots, &key, sizeof(key), &slot);
	}
	if (r < 0)
		return NULL;
	fe = ember_slots_at(&f->slots, slot);
	if (!r && (!fe->error || now_ns - fe->read_ns < f->retry_ns))
		return fe->error ? NULL : fe->facts;
	fe->key = key;
	fe->read_ns = now_ns;
	fd = ember_broker_request(broker, EMBER_BROKER_MAPPED_FILE, pid, e->start, NULL);
	fe->error = fd < 0 ? fd : f->read(fd, ember_maps_path(maps, e), fe->facts);
	if (fd >= 0)
		close(fd);
	f->files_read++;
	if (fe->error) {
		f->file_errors++;
		memset(fe->facts, 0, f->facts_size);
		return NULL;
	}
	return fe->facts;
}
