#!/bin/sh
# test_fs_query.sh - the mount's query directories, TABLE/.filter/@KEY=
# VALUE/... (issue 29), with plain ls and cat: the paper's anchors from
# *.cnn.com, a row regex, chained filters, a time range, regex bytes that
# need escaping (/, %, @, 0x00, 0xff) round-tripping through %XX, each
# row file holding what tabletctl lookup prints with the same filters;
# .filter not listed in the table; unknown keys, repeated keys and empty
# time ranges not found; a bad regex an error (EINVAL); nothing in it
# writable (EROFS).
set -eu
. "${top_srcdir:?}/tests/fs/lib.sh"

fs_webtable
ctl set webtable com.cnn.www 'contents:%=<html>6@6' anchor:cnnsi.com=CNN@9 \
    anchor:my.look.ca=CNN.com@8 anchor:www.cnn.com=Top@7
ctl set webtable com.cnn.www%2Fsports anchor:sport.cnn.com=Sports@4
ctl set webtable com.example anchor:a.cnn.com=x@4 'contents:%=ex@4'
ctl set webtable org.cnn anchor:cnn.com=z@4
ctl set webtable 'k%00%FF' 'anchor:a%2Fb%25c=slash@3' 'anchor:x=y@5'
fs_mount

F=$M/webtable/.filter
Q=$F/@column=anchor:.*\\.cnn\\.com
check_eq "the paper's anchors: rows" "$(ls "$Q" | tr '\n' ' ')" \
    "com.cnn.www com.cnn.www%2Fsports com.example "
check_eq "a row file is lookup's output with the same filters" \
    "$(cat "$Q/com.cnn.www")" \
    "$(ctl lookup webtable com.cnn.www 'columns=anchor:.*\.cnn\.com')"
check_eq "cat of every row" "$(cat "$Q"/* | grep -c '^  anchor:')" 3
check_eq ".filter is not listed" "$(ls -a "$M/webtable" | grep -c filter || :)" 0
check_eq "a row regex" "$(ls "$F/@row=com%5C.cnn%5C..*" | tr '\n' ' ')" \
    "com.cnn.www com.cnn.www%2Fsports "
check_eq "filters chain as directories" \
    "$(ls "$F/@row=com.*/@value=CNN.*" | tr '\n' ' ')" "com.cnn.www "
check_eq "chained: the row file" "$(cat "$F/@row=com.*/@value=CNN.*/com.cnn.www")" \
    "----
com.cnn.www
  anchor:cnnsi.com @ 9
    \"CNN\"
  anchor:my.look.ca @ 8
    \"CNN.com\""
check_eq "a time range" "$(ls "$F/@start-ts=5/@end-ts=8" | tr '\n' ' ')" \
    "com.cnn.www k%00%FF "
check_eq "no filter: every row" "$(ls "$F" | wc -l)" 5
# A qualifier regex of the bytes "a/b%c": '/' and '%' spelled %2F, %25.
check_eq "escaped regex bytes round-trip" \
    "$(cat "$F/@qualifier=a%2Fb%25c"/*)" "----
k%00%FF
  anchor:a%2Fb%25c @ 3
    \"slash\""
check_eq "a row regex of 0x00 0xff bytes" \
    "$(ls "$F/@row=k%00%FF")" "k%00%FF"
check_eq "and as the regex escapes \\x00\\xff" \
    "$(ls "$F/@row=k%5Cx00%5Cxff")" "k%00%FF"
check_eq "an empty qualifier regex is %" \
    "$(ls "$F/@qualifier=%" | tr '\n' ' ')" "com.cnn.www com.example "

[ ! -e "$F/@nokey=1" ] || fail "an unknown key exists"
[ ! -e "$F/@row=a/@row=b" ] || fail "a repeated key exists"
[ ! -e "$F/@start-ts=5/@end-ts=5" ] || fail "an empty time range exists"
[ ! -e "$Q/org.cnn" ] || fail "a row the filter rules out exists"
expect_fail "Invalid argument" ls "$F/@row=(unclosed"
expect_fail "Read-only file system" sh -c "echo x > '$Q/com.cnn.www'"
expect_fail "Read-only file system" rm "$Q/com.cnn.www"
expect_fail "Read-only file system" mkdir "$F/newrow"
expect_fail "File exists" mkdir "$F/@row=x"
expect_fail "Read-only file system" rmdir "$Q"
