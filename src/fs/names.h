/*
 * names.h - the spelling of keys as names moved to util/names.h, which
 * tabletctl shares; this forwards to it for fs_file.c until that file's
 * rewrite includes util/names.h itself (then remove this file).
 */
#include "util/names.h"
