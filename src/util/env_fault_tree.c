/*
 * env_fault_tree.c - the fault env's in-memory tree (env_fault_int.h).
 *
 * The tree is made of nodes (files and directories) with reference
 * counts: a node is referenced by each directory slot that names it, and
 * by each open file and lock on it.  A directory keeps its entries sorted
 * by name, each with two slots: the node the name refers to now, and the
 * node it referred to at the last dir sync; an entry absent from both is
 * dropped.  The caller holds the env's mutex.
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "util/alloc.h"
#include "util/buf.h"
#include "util/env_fault_int.h"

struct fault_node *
fault_node_new(bool is_dir)
{
	struct fault_node *node;

	if ((node = bt_calloc(1, sizeof(*node))) == NULL)
		return NULL;
	node->refs = 1;
	node->is_dir = is_dir;
	buf_init(&node->data);
	buf_init(&node->shadow);
	return node;
}

void
fault_node_ref(struct fault_node *node)
{
	if (node != NULL)
		node->refs++;
}

void
fault_node_unref(struct fault_node *node)
{
	size_t i;

	if (node == NULL)
		return;
	assert(node->refs > 0);
	if (--node->refs > 0)
		return;
	for (i = 0; i < node->n; i++) {
		bt_free(node->v[i].name);
		fault_node_unref(node->v[i].now);
		fault_node_unref(node->v[i].durable);
	}
	bt_free(node->v);
	buf_release(&node->data);
	buf_release(&node->shadow);
	bt_free(node);
}

/* Compare a counted name with an entry's NUL-terminated one. */
static int
name_compare(const char *name, size_t len, const char *entry)
{
	size_t elen = strlen(entry);
	int c = memcmp(name, entry, len < elen ? len : elen);

	if (c != 0)
		return c;
	return len < elen ? -1 : len > elen;
}

/* The index of name in dir, or where it would be inserted. */
static size_t
dir_search(struct fault_node *dir, const char *name, size_t len, bool *found)
{
	size_t lo = 0, hi = dir->n, mid;
	int c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = name_compare(name, len, dir->v[mid].name);
		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	*found = false;
	return lo;
}

/* What name refers to now in dir, or NULL. */
struct fault_node *
fault_dir_get(struct fault_node *dir, const char *name, size_t len)
{
	bool found;
	size_t i = dir_search(dir, name, len, &found);

	return found ? dir->v[i].now : NULL;
}

/* Make name refer to node now (taking a reference).  0 or -ENOMEM. */
int
fault_dir_set(struct fault_node *dir, const char *name, size_t len,
    struct fault_node *node)
{
	struct fault_entry *v;
	bool found;
	size_t i = dir_search(dir, name, len, &found), cap;
	char *copy;

	if (found) {
		fault_node_ref(node);
		fault_node_unref(dir->v[i].now);
		dir->v[i].now = node;
		return 0;
	}
	if (dir->n == dir->cap) {
		cap = dir->cap ? dir->cap * 2 : 8;
		if ((v = bt_realloc(dir->v, cap * sizeof(*v))) == NULL)
			return -ENOMEM;
		dir->v = v;
		dir->cap = cap;
	}
	if ((copy = bt_malloc(len + 1)) == NULL)
		return -ENOMEM;
	memcpy(copy, name, len);
	copy[len] = '\0';
	memmove(&dir->v[i + 1], &dir->v[i], (dir->n - i) * sizeof(*dir->v));
	dir->v[i].name = copy;
	dir->v[i].now = node;
	dir->v[i].durable = NULL;
	dir->n++;
	fault_node_ref(node);
	return 0;
}

/* Remove name from dir now; it stays in the durable slot if synced. */
void
fault_dir_unset(struct fault_node *dir, const char *name, size_t len)
{
	bool found;
	size_t i = dir_search(dir, name, len, &found);

	if (!found)
		return;
	fault_node_unref(dir->v[i].now);
	dir->v[i].now = NULL;
	if (dir->v[i].durable == NULL) {
		bt_free(dir->v[i].name);
		memmove(&dir->v[i], &dir->v[i + 1],
		    (dir->n - i - 1) * sizeof(*dir->v));
		dir->n--;
	}
}

/* Drop entries that are absent both now and durably. */
void
fault_dir_compact(struct fault_node *dir)
{
	size_t i, j;

	for (i = j = 0; i < dir->n; i++) {
		if (dir->v[i].now == NULL && dir->v[i].durable == NULL) {
			bt_free(dir->v[i].name);
			continue;
		}
		dir->v[j++] = dir->v[i];
	}
	dir->n = j;
}

bool
fault_dir_is_empty(struct fault_node *dir)
{
	size_t i;

	for (i = 0; i < dir->n; i++)
		if (dir->v[i].now != NULL)
			return false;
	return true;
}

/*
 * Split path into its parent directory and last name.  Empty components
 * and "." are skipped; a path with no name left is the root, returned as
 * *parent = NULL.  -ENOENT or -ENOTDIR when a directory on the way is
 * missing or is a file (no detail set: callers name the operation).
 */
int
fault_walk(struct fault_env *e, const char *path, struct fault_node **parent,
    const char **name, size_t *len)
{
	struct fault_node *dir = e->root, *child;
	const char *p = path, *seg, *last = NULL;
	size_t seglen, lastlen = 0;

	mutex_assert_held(&e->mu);	/* the mutex guards the tree */
	for (;;) {
		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		seg = p;
		while (*p != '\0' && *p != '/')
			p++;
		seglen = (size_t)(p - seg);
		if (seglen == 1 && seg[0] == '.')
			continue;
		if (last != NULL) {
			if ((child = fault_dir_get(dir, last, lastlen)) == NULL)
				return -ENOENT;
			if (!child->is_dir)
				return -ENOTDIR;
			dir = child;
		}
		last = seg;
		lastlen = seglen;
	}
	*parent = last != NULL ? dir : NULL;
	*name = last;
	*len = lastlen;
	return 0;
}

/* The node at path, or -ENOENT / -ENOTDIR. */
int
fault_find(struct fault_env *e, const char *path, struct fault_node **out)
{
	struct fault_node *parent, *node;
	const char *name;
	size_t len;
	int rc;

	if ((rc = fault_walk(e, path, &parent, &name, &len)) < 0)
		return rc;
	if (parent == NULL) {
		*out = e->root;
		return 0;
	}
	if ((node = fault_dir_get(parent, name, len)) == NULL)
		return -ENOENT;
	*out = node;
	return 0;
}
