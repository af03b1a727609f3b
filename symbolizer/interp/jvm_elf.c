// SPDX-License-Identifier: Apache-2.0
#include "symbolizer/interp/jvm_elf.h"

#include <errno.h>
#include <libelf.h>
#include <string.h>

/* The variables, table by table, in the order of struct ember_jvm_table_vars's fields;
 * NULL: the table has no such field. */
#define FIELDS 6
static const char *const names[3][FIELDS] = {
    {"gHotSpotVMStructs", "gHotSpotVMStructEntryArrayStride", "gHotSpotVMStructEntryTypeNameOffset",
     "gHotSpotVMStructEntryFieldNameOffset", "gHotSpotVMStructEntryOffsetOffset",
     "gHotSpotVMStructEntryAddressOffset"},
    {"gHotSpotVMTypes", "gHotSpotVMTypeEntryArrayStride", "gHotSpotVMTypeEntryTypeNameOffset", NULL,
     "gHotSpotVMTypeEntrySizeOffset", NULL},
    {"gHotSpotVMIntConstants", "gHotSpotVMIntConstantEntryArrayStride",
     "gHotSpotVMIntConstantEntryNameOffset", NULL, "gHotSpotVMIntConstantEntryValueOffset", NULL},
};

/* Each table's variables, found among the symbols: 0, or -ENOENT with *missing named. */
static int table_vars(const struct ember_elf_image *f, const struct ember_elf_sym *syms,
                      struct ember_jvm_table_vars *out, const char *const *want,
                      const char **missing)
{
	uint64_t v[FIELDS] = {0};

	for (size_t i = 0; i < FIELDS; i++) {
		const struct ember_elf_sym *s = &syms[i];

		if (!want[i])
			continue;
		if (!s->addr || s->type != STT_OBJECT || s->size != 8 ||
		    !ember_elf_image_in_segment(f, s->addr, PF_W)) {
			*missing = want[i];
			return -ENOENT;
		}
		v[i] = s->addr;
	}
	*out = (struct ember_jvm_table_vars){v[0], v[1], v[2], v[3], v[4], v[5]};
	return 0;
}

static int read_elf(Elf *elf, void *facts)
{
	struct ember_jvm_elf *out = facts;
	struct ember_jvm_table_vars *tables[3] = {&out->structs, &out->types, &out->ints};
	const char *flat[3 * FIELDS], *missing = NULL;
	struct ember_elf_sym syms[3 * FIELDS];
	struct ember_elf_image f;
	int err;

	memset(out, 0, sizeof(*out));
	/* ember_elf_image_symbols takes names only: NULLs become names no symbol has. */
	for (size_t i = 0; i < 3 * FIELDS; i++)
		flat[i] = names[i / FIELDS][i % FIELDS] ? names[i / FIELDS][i % FIELDS] : "";
	err = ember_elf_image_start(elf, &f, out->segs, &out->nsegs, flat, 3 * FIELDS, syms);
	if (err)
		return err;
	/* gHotSpotVMStructs is what makes a file a HotSpot VM; the rest says whether ember
	 * can read it. */
	if (!syms[0].addr)
		return 0;
	out->kind = EMBER_JVM_ELF_UNSUPPORTED;
	out->why = "it does not export its self-description tables as HotSpot does";
	for (size_t t = 0; t < 3; t++)
		if (table_vars(&f, syms + t * FIELDS, tables[t], names[t], &missing))
			return 0;
	out->kind = EMBER_JVM_ELF_HOTSPOT;
	out->why = NULL;
	return 0;
}

int ember_jvm_elf_read(int fd, struct ember_jvm_elf *out)
{
	return ember_elf_read_fd(fd, read_elf, out);
}

int ember_jvm_elf_read_mem(const void *image, size_t len, struct ember_jvm_elf *out)
{
	return ember_elf_read_memory(image, len, read_elf, out);
}

struct ember_jvm_table_vars ember_jvm_vars_at(const struct ember_jvm_table_vars *v, uint64_t bias)
{
	const uint64_t in[6] = {v->base,       v->stride, v->type_name,
	                        v->field_name, v->value,  v->address};
	uint64_t o[6];

	for (size_t i = 0; i < 6; i++)
		o[i] = in[i] ? in[i] + bias : 0;
	return (struct ember_jvm_table_vars){o[0], o[1], o[2], o[3], o[4], o[5]};
}
