/* slice.h — a window [offset, offset+size) of another vol: the data area of
 * an md member behind its superblock, the payload of a LUKS device. */
#ifndef URAID_SLICE_H
#define URAID_SLICE_H

#include "core/vol.h"

#include <stdbool.h>

/* The slice owns child (closes it) when owns_child is true.  offset and
 * size must be multiples of child->block_min and lie inside child. */
int slice_open(struct vol *child, uint64_t offset, uint64_t size,
	       bool owns_child, const char *name, struct vol **out);

/* From now on the slice owns its child: closing the slice closes it.  For
 * a caller that lends a vol to a layer which may fail (and then closes
 * what it was given) and hands it over only once that layer has taken it
 * (stack/graph.c with md arrays and LUKS). */
void slice_adopt(struct vol *slice);

#endif
