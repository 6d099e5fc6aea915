#!/bin/sh
# corpus.sh writes the King James Bible from Debian's bible-kjv package as
# plain text, one verse a line (the reference dropped), split by whole books
# into train.txt and heldout.txt under the directory given (default: data/
# beside this script), then prints their SHA-256 sums. The held-out books
# are never trained on: from the Old Testament Ruth, Ecclesiastes,
# Lamentations, Joel, Jonah; from the New Galatians, Philippians, Hebrews,
# James, 1 Peter, 1 John (about 4 % of the text). Requires: apt-get install
# bible-kjv. The sums to expect are in ../../models/trained/PROVENANCE.md.
set -eu
out=${1:-$(dirname "$0")/data}
mkdir -p "$out"
# -f turns pretty-printing off: one "Ref Text" line a verse. -m raises the
# buffer limit so the whole range prints in one call.
bible -f -m 10000000 "Gen1:1-Rev22:21" | LC_ALL=C awk -v out="$out" '
BEGIN {
	split("Ruth Eccl Lam Joel Jonah Gal Phi Heb Jas 1Pet 1Jn", h, " ")
	for (i in h) held[h[i]] = 1
}
{
	book = $1
	sub(/[0-9]+:[0-9]+$/, "", book)
	text = $0
	sub(/^[^ ]+ /, "", text)
	if (book in held) print text > (out "/heldout.txt")
	else print text > (out "/train.txt")
}'
cd "$out" && sha256sum train.txt heldout.txt
