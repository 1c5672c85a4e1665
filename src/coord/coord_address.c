/*
 * coord_address.c - the syntax of a cell's address
 * ("zk://H:P[,H:P...]/CELL") and of the names inside a cell.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord/coord_int.h"
#include "util/error.h"

#define CELL_SCHEME	"zk://"

static bool
name_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-';
}

/* ZooKeeper refuses "." and ".." as path components. */
int
coord_name_check(const char *what, const char *name)
{
	size_t n;

	if (name == NULL)
		return bt_error_set(-EINVAL, "%s: missing", what);
	n = strlen(name);
	if (n == 0 || n > COORD_NAME_MAX)
		return bt_error_set(-EINVAL, "%s '%s': must be 1 to %d "
		    "characters", what, name, COORD_NAME_MAX);
	for (size_t i = 0; i < n; i++)
		if (!name_char(name[i]))
			return bt_error_set(-EINVAL, "%s '%s': only letters, "
			    "digits and _.- allowed", what, name);
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return bt_error_set(-EINVAL, "%s '%s': not a name", what,
		    name);
	return 0;
}

bool
coord_address_is_cell(const char *s)
{
	return s != NULL && strncmp(s, CELL_SCHEME, strlen(CELL_SCHEME)) == 0;
}

/* One "host:port" of n bytes at p: a non-empty host without ':' or '/',
 * a port of 1-65535. */
static int
host_check(const char *address, const char *p, size_t n)
{
	const char *colon = memchr(p, ':', n);
	size_t hn;
	long port = 0;

	if (colon == NULL)
		return bt_error_set(-EINVAL, "%s: '%.*s' has no :PORT",
		    address, (int)n, p);
	hn = (size_t)(colon - p);
	if (hn == 0)
		return bt_error_set(-EINVAL, "%s: '%.*s' has no host",
		    address, (int)n, p);
	for (size_t i = 0; i < hn; i++)
		if (!name_char(p[i]))
			return bt_error_set(-EINVAL, "%s: host '%.*s': only "
			    "letters, digits and _.- allowed", address,
			    (int)hn, p);
	if (colon + 1 == p + n)
		return bt_error_set(-EINVAL, "%s: '%.*s' has no port",
		    address, (int)n, p);
	for (const char *q = colon + 1; q < p + n; q++) {
		if (*q < '0' || *q > '9' || port > 65535)
			return bt_error_set(-EINVAL, "%s: port in '%.*s' is "
			    "not a number from 1 to 65535", address, (int)n,
			    p);
		port = port * 10 + (*q - '0');
	}
	if (port < 1 || port > 65535)
		return bt_error_set(-EINVAL, "%s: port in '%.*s' is not a "
		    "number from 1 to 65535", address, (int)n, p);
	return 0;
}

int
coord_address_parse(const char *address, char *hosts, size_t hosts_size,
    char *cell, size_t cell_size)
{
	const char *p, *slash, *q;
	size_t n;
	int rc;

	if (!coord_address_is_cell(address))
		return bt_error_set(-EINVAL, "%s: a cell address starts with "
		    "%s", address ? address : "(null)", CELL_SCHEME);
	p = address + strlen(CELL_SCHEME);
	slash = strchr(p, '/');
	if (slash == NULL || slash[1] == '\0')
		return bt_error_set(-EINVAL, "%s: no /CELL after the hosts "
		    "(zk://HOST:PORT[,HOST:PORT...]/CELL)", address);
	if (slash == p)
		return bt_error_set(-EINVAL, "%s: no HOST:PORT", address);
	for (q = p; q < slash;) {
		const char *end = memchr(q, ',', (size_t)(slash - q));

		if (end == NULL)
			end = slash;
		if (end == q)
			return bt_error_set(-EINVAL, "%s: an empty host in "
			    "the list", address);
		if ((rc = host_check(address, q, (size_t)(end - q))) < 0)
			return rc;
		q = end < slash ? end + 1 : end;
		if (end < slash && q == slash)
			return bt_error_set(-EINVAL, "%s: an empty host in "
			    "the list", address);
	}
	if ((rc = coord_name_check("cell name", slash + 1)) < 0) {
		char why[160];

		/* The detail is rewritten from a copy: vsnprintf's source
		 * may not be its destination. */
		snprintf(why, sizeof(why), "%s", bt_error_detail());
		return bt_error_set(rc, "%s: %s", address, why);
	}
	n = (size_t)(slash - p);
	if (n >= hosts_size || n >= COORD_HOSTS_MAX)
		return bt_error_set(-EINVAL, "%s: the host list is longer "
		    "than %zu bytes", address, hosts_size - 1);
	if (strlen(slash + 1) >= cell_size)
		return bt_error_set(-EINVAL, "%s: the cell name is longer "
		    "than %zu bytes", address, cell_size - 1);
	memcpy(hosts, p, n);
	hosts[n] = '\0';
	strcpy(cell, slash + 1);
	return 0;
}
