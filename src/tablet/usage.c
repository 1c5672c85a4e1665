/*
 * usage.c - counts per column family (usage.h).
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "tablet/usage.h"
#include "util/alloc.h"

void
usage_init(struct usage *u)
{
	memset(u, 0, sizeof(*u));
}

void
usage_release(struct usage *u)
{
	bt_free(u->labels);
	usage_init(u);
}

void
usage_clear(struct usage *u)
{
	u->count = 0;
}

struct usage_label *
usage_find(const struct usage *u, struct slice name)
{
	for (size_t i = 0; i < u->count; i++) {
		struct usage_label *l = &u->labels[i];

		if (strlen(l->name) == name.n &&
		    memcmp(l->name, name.p, name.n) == 0)
			return l;
	}
	return NULL;
}

int
usage_obtain(struct usage *u, struct slice name, struct usage_label **out)
{
	struct usage_label *l;

	if ((l = usage_find(u, name)) != NULL) {
		*out = l;
		return 0;
	}
	if (name.n > CATALOG_NAME_MAX)
		return -EINVAL;
	if (u->count == u->cap) {
		size_t cap = u->cap ? 2 * u->cap : 4;

		if ((l = bt_realloc(u->labels, cap * sizeof(*l))) == NULL)
			return -ENOMEM;
		u->labels = l;
		u->cap = cap;
	}
	l = &u->labels[u->count++];
	memset(l, 0, sizeof(*l));
	memcpy(l->name, name.p, name.n);
	*out = l;
	return 0;
}

int
usage_merge(struct usage *dst, const struct usage *src)
{
	struct usage_label *l;
	int rc;

	for (size_t i = 0; i < src->count; i++) {
		const struct usage_label *s = &src->labels[i];

		if ((rc = usage_obtain(dst, slice_make(s->name,
		    strlen(s->name)), &l)) < 0)
			return rc;
		l->entries += s->entries;
		l->key_bytes += s->key_bytes;
		l->value_bytes += s->value_bytes;
		l->bytes += s->bytes;
	}
	return 0;
}

uint64_t
usage_total_bytes(const struct usage *u)
{
	uint64_t n = 0;

	for (size_t i = 0; i < u->count; i++)
		n += usage_label_bytes(&u->labels[i]);
	return n;
}

uint64_t
usage_share(uint64_t whole, uint64_t part_bytes, uint64_t total_bytes)
{
	assert(part_bytes <= total_bytes);
	if (total_bytes == 0)
		return 0;
	return (uint64_t)((unsigned __int128)whole * part_bytes /
	    total_bytes);
}

void
usage_apportion(struct usage *u, uint64_t whole)
{
	uint64_t total = usage_total_bytes(u), given = 0;
	size_t largest = 0;

	for (size_t i = 0; i < u->count; i++) {
		struct usage_label *l = &u->labels[i];

		l->bytes = usage_share(whole, usage_label_bytes(l), total);
		given += l->bytes;
		if (usage_label_bytes(l) >
		    usage_label_bytes(&u->labels[largest]))
			largest = i;
	}
	if (total > 0)
		u->labels[largest].bytes += whole - given;
}
