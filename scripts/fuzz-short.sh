#!/usr/bin/env bash
# fuzz-short.sh runs every Go fuzz target (func FuzzXxx) for a short while,
# one target at a time, and reports each one's result:
#
#   FUZZTIME=30s scripts/fuzz-short.sh            # every package
#   scripts/fuzz-short.sh ./httpapi ./outbox      # some packages
#
# FUZZTIME is any -fuzztime value (default 10s; "5000x" counts executions).
# FUZZ_STRICT=1 also fails a target that ended without a failing input
# (see golang/go#75804 below).
# Targets are found with `go test -list`, so a new one is fuzzed without
# editing this script. Without -fuzz the same targets run their seed
# corpora (testdata/fuzz/<Name>/) in `make test`; this is the part that
# searches for new inputs. A failing input is written by `go test` to the
# package's testdata/fuzz/<Name>/ and named in the output: add it to the
# corpus once the bug is fixed.
#
# Like `make test`, it needs a PostgreSQL: with DATABASE_URL unset it runs
# itself under ./devtools/withpg, which starts a private cluster for
# the whole run (so fuzz workers share one server instead of each test
# binary starting its own). Exit status: 0 when every target passed.
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-10s}

if [[ -z "${DATABASE_URL:-}" ]]; then
	exec "$GO" run ./devtools/withpg -- "$0" "$@"
fi

pkgs=("$@")
if [[ ${#pkgs[@]} -eq 0 ]]; then
	pkgs=(./...)
fi

# `go test -list` prints each package's matching names, then "ok <pkg>".
mapfile -t targets < <(
	"$GO" test -list '^Fuzz' "${pkgs[@]}" |
		awk '/^Fuzz/ { names[n++] = $1; next }
		     /^ok / { for (i = 0; i < n; i++) print $2 " " names[i]; n = 0 }'
)
if [[ ${#targets[@]} -eq 0 ]]; then
	echo "fuzz-short: no fuzz targets in ${pkgs[*]}" >&2
	exit 1
fi

# corpus lists a target's committed and written inputs.
corpus() { ls "$1" 2>/dev/null || true; }

failed=()
flaked=()
for t in "${targets[@]}"; do
	pkg=${t% *}
	name=${t#* }
	dir=$("$GO" list -f '{{.Dir}}' "$pkg")/testdata/fuzz/$name
	before=$(corpus "$dir")
	echo "=== fuzz $pkg $name for $FUZZTIME"
	if "$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg"; then
		continue
	fi
	# Go 1.26's coordinator can fail a target with a bare "context deadline
	# exceeded" when a duration -fuzztime ends while a worker is mid-input
	# (golang/go#75804, fixed in Go 1.27). A real finding always writes its
	# input to testdata/fuzz/<Name>/, so a failure that wrote none, while
	# the target still passes as a plain test (no build or setup problem),
	# is counted as that flake. A count (FUZZTIME=20000x) avoids the race.
	if [[ "$(corpus "$dir")" == "$before" && "${FUZZ_STRICT:-0}" != 1 ]] &&
		"$GO" test -run "^${name}\$" "$pkg" >/dev/null; then
		flaked+=("$pkg $name")
	else
		failed+=("$pkg $name")
	fi
done

echo
echo "fuzz-short: ${#targets[@]} targets, ${#failed[@]} failed, ${#flaked[@]} ended by golang/go#75804 (no failing input)"
for f in "${failed[@]}"; do
	echo "  FAIL  $f"
done
for f in "${flaked[@]}"; do
	echo "  FLAKE $f"
done
[[ ${#failed[@]} -eq 0 ]]
