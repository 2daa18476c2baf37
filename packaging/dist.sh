#!/bin/sh
# packaging/dist.sh builds the release archives (`make dist`):
#
#   $DIST/compute_<version>_linux_<arch>.tar.gz   one per arch in $ARCHES
#   $DIST/SHA256SUMS                              their checksums, `sha256sum -c` format
#
# Each archive holds one directory, compute_<version>_linux_<arch>/, with the
# static binary (version and commit linked into main.version and main.commit),
# README.md, LICENSE when the repository has one, the docs/ tree less its Go
# files (the README and every page link into it, concepts/, cli.md,
# security.md, operations/ …: a page the archive left out was a dead
# reference on an operator's machine) and packaging/systemd/ as systemd/.
# The archives are reproducible: sorted names, owner 0, the commit's time as
# every mtime.
#
# Environment (the Makefile sets all of it): GO, VERSION, COMMIT, DIST,
# ARCHES. Run from the repository root. Needs GNU tar.
set -eu

: "${GO:=go}" "${DIST:=dist}" "${ARCHES:=amd64 arm64}"
: "${VERSION:?VERSION is required}" "${COMMIT:=unknown}"
case "$VERSION" in
*/* | *' '* | '') echo "dist: VERSION '$VERSION' cannot name a file" >&2; exit 2 ;;
esac
[ -f go.mod ] && [ -d cmd/compute ] || { echo "dist: run from the repository root" >&2; exit 2; }

# Every mtime in the archives: the commit's time, or SOURCE_DATE_EPOCH.
: "${SOURCE_DATE_EPOCH:=$(git log -1 --format=%ct 2>/dev/null || echo 0)}"

mkdir -p "$DIST"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

archives=""
for arch in $ARCHES; do
	name="compute_${VERSION}_linux_${arch}"
	stage="$work/$name"
	mkdir -p "$stage/systemd"
	echo "dist: building $name"
	CGO_ENABLED=0 GOOS=linux GOARCH="$arch" "$GO" build -trimpath \
		-ldflags "-s -w -X main.version=$VERSION -X main.commit=$COMMIT" \
		-o "$stage/compute" ./cmd/compute
	cp README.md "$stage/"
	[ ! -f LICENSE ] || cp LICENSE "$stage/"
	# The docs' Go files (the package that embeds the API's schema, its
	# tests) are source, not documentation.
	find docs -type f ! -name '*.go' | while IFS= read -r f; do
		mkdir -p "$stage/$(dirname "$f")"
		cp "$f" "$stage/$f"
	done
	cp packaging/systemd/*.service packaging/systemd/*.env "$stage/systemd/"
	chmod 0755 "$stage/compute"
	find "$stage" -type d -exec chmod 0755 {} +
	find "$stage" -type f ! -name compute -exec chmod 0644 {} +
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
		-C "$work" -cf - "$name" | gzip -n -9 >"$DIST/$name.tar.gz"
	archives="$archives $name.tar.gz"
done

cd "$DIST"
if command -v sha256sum >/dev/null 2>&1; then
	sha256sum $archives >SHA256SUMS
else
	shasum -a 256 $archives >SHA256SUMS
fi
echo "dist: wrote$(printf ' %s' $archives) and SHA256SUMS in $DIST"
