/*
 * names.h - how row keys and qualifiers (arbitrary bytes) are spelled as
 * path components of the mount and in tabletctl's arguments and output,
 * and back (docs/design.md section 2, "Names"; tabletfs(5), NAMES).
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
 * A spelling longer than a path component may be (NAMES_MAX_COMPONENT) is
 * listed by the mount under its short form:
 *
 *	PREFIX "%~" HASH
 *
 * PREFIX is the longest run of whole units (a literal byte, a literal
 * UTF-8 sequence or a %XX) at the start of the spelling that leaves room
 * for the rest, at most NAMES_SHORT_PREFIX_MAX bytes; HASH is the first 16
 * bytes of the SHA-256 of the whole raw key, as 32 lower-case hex digits.
 * A canonical spelling never holds "%~" ('%' is always followed by two hex
 * digits), so a short form is never the spelling of another key, and
 * names_decode() refuses it.  A short form is resolved by decoding PREFIX
 * and finding, among the keys that start with those bytes, the one whose
 * names_component() is the name.
 *
 * The functions keep no state: threads may call them concurrently, each
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
/* The short form's marker and hash: "%~" and 32 hex digits. */
#define NAMES_SHORT_MARK "%~"
#define NAMES_SHORT_HASH_DIGITS 32
#define NAMES_SHORT_SUFFIX (2 + NAMES_SHORT_HASH_DIGITS)
#define NAMES_SHORT_PREFIX_MAX (NAMES_MAX_COMPONENT - NAMES_SHORT_SUFFIX)

/*
 * Append the escaped spelling of raw to out (no NUL).  0 or -ENOMEM, which
 * leaves out unchanged.  The result may be longer than NAMES_MAX_COMPONENT
 * (tabletctl prints it whole; the mount lists names_component()).
 */
int names_encode(struct slice raw, struct buf *out);

/*
 * Append the path component the mount lists for raw: its spelling when
 * that fits in NAMES_MAX_COMPONENT bytes, else its short form.  0 or
 * -ENOMEM, which leaves out unchanged.
 */
int names_component(struct slice raw, struct buf *out);

/*
 * Whether the component name (n bytes) has the short form's shape: 1 with
 * out set to the bytes its PREFIX stands for (every key it may name starts
 * with them), 0 when it is not a short form (out unchanged), -EINVAL when
 * it has the shape but PREFIX cannot be decoded, or -ENOMEM.
 */
int names_short_prefix(const char *name, size_t n, struct buf *out);

/*
 * Whether names_component(raw) is exactly the n bytes at name: 1 yes, 0
 * no, or -ENOMEM.  scratch is working space (its content is replaced).
 */
int names_component_is(struct slice raw, const char *name, size_t n,
    struct buf *scratch);

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
/* The value of hex digit c (either case), or -1. */
int names_hex_value(int c);

/* The same in place: name[0..*n) becomes the bytes it stands for and *n
 * their count.  0, or -EINVAL (name unchanged). */
int names_decode_in_place(char *name, size_t *n);

#endif
