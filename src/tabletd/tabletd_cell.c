/*
 * tabletd_cell.c - what both roles of tabletd read of their cell, and
 * their pauses (tabletd.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coord/coord.h"
#include "tabletd/tabletd.h"
#include "util/error.h"

int
tabletd_cell_storage(struct coord *c, char *out, size_t size)
{
	char *settings = NULL, *line, *save = NULL;
	int rc;

	if ((rc = coord_cell_settings(c, &settings)) != 0)
		return rc == BT_NOTFOUND ? bt_error_set(-ENOENT, "the cell "
		    "does not exist (tabletctl init creates it)") : rc;
	rc = bt_error_set(-EINVAL, "the cell's settings name no storage");
	for (line = strtok_r(settings, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "storage=", 8) == 0 && line[8] != '\0') {
			snprintf(out, size, "%s", line + 8);
			rc = 0;
		}
	}
	free(settings);
	return rc;
}

void
tabletd_pause_ms(int ms)
{
	struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&t, NULL);
}
