# lib.sh: what run.sh and llamacpp.sh share, sourced with TEXT and OUT set:
# die, the held-out text checked against models/trained/PROVENANCE.md, and
# the gelo binary (GELO, built into OUT unless given).

die() {
	echo "$(basename "$0"): $*" >&2
	exit 1
}

check_text() {
	[ -f "$TEXT" ] || die "$TEXT is missing: run tools/train/corpus.sh"
	if [ "$TEXT" = tools/train/data/heldout.txt ]; then
		local want got
		want=$(grep -o 'heldout.txt |[^|]*|[^|]*|[^|]*| [0-9a-f]\{64\}' models/trained/PROVENANCE.md | grep -o '[0-9a-f]\{64\}')
		got=$(sha256sum "$TEXT" | cut -d' ' -f1)
		[ "$want" = "$got" ] || die "$TEXT: SHA-256 $got, PROVENANCE.md says $want"
	fi
}

build_gelo() {
	if [ -z "${GELO:-}" ]; then
		GELO=$OUT/gelo
		go build -o "$GELO" ./cmd/gelo || die "go build ./cmd/gelo failed"
	fi
}
