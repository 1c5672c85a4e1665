#!/bin/sh
# test_tabletctl_filter.sh - tabletctl's read filters (issue 29) end to
# end on a fresh store: the paper's own `read webtable
# columns='anchor:.*\.cnn\.com'`, regex= on row keys (anchored, bytes,
# narrowing), columns= mixing names, regexes and families, cells-per-
# column, start-ts/end-ts as [start, end), keys-only=true, count with
# filters, lookup with them, and the errors: a bad regex (the compiler's
# message), a time range that holds no time, a bad keys-only.  Every
# check compares exact stdout, stderr and exit status.
set -eu

: "${top_builddir:?top_builddir is not set}"
ctl="$top_builddir/src/ctl/tabletctl"
if [ ! -x "$ctl" ]; then
	echo "test_tabletctl_filter: $ctl is not built" >&2
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

store="$tmp/store"
checks=0
failures=0
nl='
'

. "$(dirname "$0")/check.sh"

tc() {
	"$ctl" -s "$store" "$@"
}

tc init
tc createtable webtable families=contents:maxversions=3,anchor,language
tc set webtable com.cnn.www 'contents:%=<html>3@3' 'contents:%=<html>5@5' \
    'contents:%=<html>6@6' anchor:cnnsi.com=CNN@9 \
    anchor:my.look.ca=CNN.com@8 anchor:www.cnn.com=Top@7 language:%=EN@2
tc set webtable com.cnn.www%2Fsports anchor:sport.cnn.com=Sports@4
tc set webtable com.example anchor:a.cnn.com=x@4 'contents:%=ex@4'
tc set webtable xcom.cnn.www anchor:b.cnn.com=y@4
tc set webtable org.cnn anchor:cnn.com=z@4
tc set webtable 'k%00%FF' 'anchor:q=bin@1'

check "the paper's example: anchors from *.cnn.com" 0 "----
com.cnn.www
  anchor:www.cnn.com @ 7
    \"Top\"
----
com.cnn.www%2Fsports
  anchor:sport.cnn.com @ 4
    \"Sports\"
----
com.example
  anchor:a.cnn.com @ 4
    \"x\"
----
xcom.cnn.www
  anchor:b.cnn.com @ 4
    \"y\"" '' tc read webtable 'columns=anchor:.*\.cnn\.com'

check "regex= matches whole row keys" 0 "----
com.cnn.www
  anchor:www.cnn.com @ 7
    \"Top\"
----
com.cnn.www%2Fsports
  anchor:sport.cnn.com @ 4
    \"Sports\"" '' \
    tc read webtable 'regex=com\.cnn\..*' 'columns=anchor:.*\.cnn\.com'

check "regex= is not found inside a key (anchored)" 0 "----
com.cnn.www" '' sh -c "'$ctl' -s '$store' read webtable \
    'regex=com\.cnn\.www' keys-only=true cells-per-column=1 | sed -n 1,2p"

check "regex= sees bytes, not the %XX spelling" 0 "----
k%00%FF
  anchor:q @ 1
    \"bin\"" '' tc read webtable 'regex=k\x00\xff'

check "columns= mixes families, names and regexes" 0 "----
com.cnn.www
  anchor:cnnsi.com @ 9
    \"CNN\"
  anchor:my.look.ca @ 8
    \"CNN.com\"
  language:% @ 2
    \"EN\"" '' \
    tc lookup webtable com.cnn.www 'columns=anchor:cnnsi.com,anchor:my\..*,language'

tc set webtable plus 'anchor:a+b=plus@1' 'anchor:aab=x@1'
check "a qualifier with + is a regex in columns=" 0 "----
plus
  anchor:aab @ 1
    \"x\"" '' tc lookup webtable plus 'columns=anchor:a+b'
check "and names itself exactly as %2B" 0 "----
plus
  anchor:a+b @ 1
    \"plus\"" '' tc lookup webtable plus 'columns=anchor:a%2Bb'

check "cells-per-column with a family" 0 "----
com.cnn.www
  contents:% @ 6
    \"<html>6\"" '' \
    tc lookup webtable com.cnn.www columns=contents cells-per-column=1

check "start-ts/end-ts are [start, end)" 0 "----
com.cnn.www
  anchor:www.cnn.com @ 7
    \"Top\"
  contents:% @ 6
    \"<html>6\"
  contents:% @ 5
    \"<html>5\"" '' \
    tc lookup webtable com.cnn.www start-ts=5 end-ts=8

check "keys-only=true prints empty values" 0 "----
com.cnn.www
  contents:% @ 6
    \"\"" '' \
    tc lookup webtable com.cnn.www columns=contents start-ts=6 keys-only=true

check "count with a row regex" 0 "3" '' tc count webtable 'regex=com.*'
check "count with a column regex" 0 "4" '' \
    tc count webtable 'columns=anchor:.*\.cnn\.com'
check "count with a time range" 0 "1" '' tc count webtable start-ts=5
check "count without filters" 0 "7" '' tc count webtable
check "read with a time range and a row regex" 0 "----
com.cnn.www" '' sh -c "'$ctl' -s '$store' read webtable regex='com.*' \
    start-ts=8 end-ts=9 keys-only=true | sed -n 1,2p"

check "a bad regex: the compiler's message" 1 '' \
    "tabletctl: read: row regex: missing closing parenthesis at offset 4 (Invalid argument)" \
    tc read webtable 'regex=(com'
check "a bad column regex" 1 '' \
    "tabletctl: lookup: column regex: quantifier does not follow a repeatable item at offset 0 (Invalid argument)" \
    tc lookup webtable com.cnn.www 'columns=anchor:*x'
check "a time range that holds no time" 2 '' \
    "tabletctl: read: bad time range: end-ts=5 is not after start-ts=5${nl}$(tc help read 2>&1 | sed -n '1,3p')" \
    tc read webtable start-ts=5 end-ts=5
check "keys-only wants true or false" 2 '' \
    "tabletctl: count: unexpected 'keys-only=yes'${nl}$(tc help count 2>&1 | sed -n '1,2p')" \
    tc count webtable keys-only=yes
check "lookup refuses regex=" 2 '' \
    "tabletctl: lookup: unexpected 'regex=a'${nl}$(tc help lookup 2>&1 | sed -n '1,2p')" \
    tc lookup webtable com.cnn.www regex=a

echo "$checks checks, $failures failed"
[ "$failures" -eq 0 ]
