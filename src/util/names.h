/*
 * names.h - how row keys and qualifiers (arbitrary bytes) are spelled as
 * path components of the mount and in tabletctl's arguments and output,
 * and back (DESIGN.md section 2, "Names").
 *
 * Printable ASCII (0x20-0x7e) and valid UTF-8 sequences stand for
 * themselves, except '/', '%' and '@'; every other byte, and those three, is
 * written %XX with upper-case hex.  A leading '.' is written %2E, so no row
 * or column is ever ".", ".." or a dot-file.  The empty string is spelled
 * "%" alone.  Decoding also accepts lower-case hex; encoding is canonical.
 * Valid UTF-8 here means the shortest form of a code point in U+0080..
 * U+10FFFF other than the surrogates U+D800..U+DFFF; C1 controls
 * (U+0080..U+009F) are written as %XX bytes too, so that a listing never
 * carries a control character.
 *
 * Both functions keep no state: threads may call them concurrently, each
 * with its own out buffer.
 */
#ifndef TABLETFS_UTIL_NAMES_H
#define TABLETFS_UTIL_NAMES_H

#include <stddef.h>

#include "util/buf.h"
#include "util/slice.h"

/* The longest path component of the mount (NAME_MAX, statfs's f_namemax);
 * FUSE passes longer ones, which the mount refuses (ENAMETOOLONG). */
#define NAMES_MAX_COMPONENT 255

/*
 * Append the escaped spelling of raw to out (no NUL).  0 or -ENOMEM, which
 * leaves out unchanged.  The result may be longer than NAMES_MAX_COMPONENT;
 * callers that list names skip those (such keys are reachable through
 * tabletctl and the API).
 */
int names_encode(struct slice raw, struct buf *out);

/*
 * Replace out's content with the bytes that the component name (of length
 * n, not NUL-terminated) stands for.  0, -ENOMEM, or -EINVAL when name is
 * not a valid spelling: empty; a '%' not followed by two hex digits (except
 * "%" alone); a literal '/', '@' or byte outside printable ASCII that is not
 * part of valid UTF-8 as defined above (so a literal C1 control too); a
 * literal leading '.'.  On error out is unchanged.  Non-canonical but valid
 * spellings (lower-case hex, %41 for 'A') decode; lookups compare decoded
 * bytes, so both reach the same key.
 */
int names_decode(const char *name, size_t n, struct buf *out);

#endif
