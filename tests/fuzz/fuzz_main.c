/*
 * fuzz_main.c - a main() for fuzz targets built without libFuzzer: run
 * the target on every file named, and on every file in every directory
 * named, and print how many inputs passed.  A failing property aborts.
 */
#ifndef TABLETFS_LIBFUZZER
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int
run_file(const char *path)
{
	FILE *f;
	uint8_t *p = NULL;
	size_t n = 0, cap = 0, got;

	if ((f = fopen(path, "rb")) == NULL) {
		perror(path);
		return -1;
	}
	do {
		if (n == cap) {
			cap = cap ? cap * 2 : 4096;
			if ((p = realloc(p, cap)) == NULL) {
				perror("realloc");
				exit(1);
			}
		}
		got = fread(p + n, 1, cap - n, f);
		n += got;
	} while (got > 0);
	fclose(f);
	LLVMFuzzerTestOneInput(p, n);
	free(p);
	return 0;
}

int
main(int argc, char **argv)
{
	struct dirent *de;
	struct stat st;
	char path[4096];
	long inputs = 0;
	DIR *d;

	for (int i = 1; i < argc; i++) {
		if (stat(argv[i], &st) < 0) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (run_file(argv[i]) < 0)
				return 1;
			inputs++;
			continue;
		}
		if ((d = opendir(argv[i])) == NULL) {
			perror(argv[i]);
			return 1;
		}
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i],
			    de->d_name);
			if (run_file(path) < 0)
				return 1;
			inputs++;
		}
		closedir(d);
	}
	printf("%s: %ld inputs passed\n", argv[0], inputs);
	return 0;
}
#endif
