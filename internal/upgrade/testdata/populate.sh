#!/usr/bin/env bash
# Puts live data into a running `compute serve --demo` of an earlier release,
# for the upgrade fixture (see upgrade_test.go, which says how the database
# is then dumped). COMPUTE (the release's binary), COMPUTE_SERVER, OPS (the
# demo's operator token) and ACME (its tenant token) must be set; a webhook
# receiver must answer 2xx at $HOOK_URL (COMPUTE_WEBHOOK_ALLOW_PRIVATE=true
# on the server for a loopback one). Prints what upgrade_test.go's constants
# take: the secrets, the reservation ids and an event cursor.
set -euo pipefail
: "${COMPUTE:?}" "${COMPUTE_SERVER:?}" "${OPS:?}" "${ACME:?}" "${HOOK_URL:?}"
field() { python3 -c "import json,sys; print(json.load(sys.stdin)[\"$1\"])"; }
iso() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
now=$(date -u +%s)

# A token issued by a token, which issues another.
bob=$(COMPUTE_TOKEN=$OPS $COMPUTE tokens create --tenant ops --identity bob --role operator -o json | field token)
carol=$(COMPUTE_TOKEN=$bob $COMPUTE tokens create --tenant acme --identity carol --role member -o json | field token)
echo "bob=$bob carol=$carol"

COMPUTE_TOKEN=$ACME $COMPUTE webhooks create --url "$HOOK_URL" --description upgrade -o json | field id

reserve() { # key gpus start end
	curl -sf -X POST -H "Authorization: Bearer $ACME" -H 'Content-Type: application/json' -H "Idempotency-Key: $1" \
		-d "{\"poolId\":\"demo-pool\",\"gpus\":$2,\"gpuModel\":\"H100-80GB\"$5,\"start\":\"$(iso "$3")\",\"end\":\"$(iso "$4")\"}" \
		"$COMPUTE_SERVER/v1/reservations" | field id
}
day=86400
active=$(reserve upg-active-1 2 "$now" $((now + day)) ',"vcpu":4,"memoryMb":8192,"diskGb":10')
booked=$(reserve upg-booked-1 1 $((now + 2 * day)) $((now + 2 * day + 3600)) '')
released=$(reserve upg-rel-1 1 "$now" $((now + 3600)) '')
long_booked=$(reserve upg-long-1 1 $((now + 3 * day)) $((now + 800 * day)) '') # longer than 366 days
pending=$(reserve upg-pend-1 8 "$now" $((now + 7200)) '')                     # more GPUs than are free
long_active=$(reserve upg-longact-1 1 "$now" $((now + 700 * day)) '')
COMPUTE_TOKEN=$ACME $COMPUTE reservations release "$released" >/dev/null
echo "active=$active booked=$booked released=$released pending=$pending long_booked=$long_booked long_active=$long_active"

sleep 3 # the reservation activates
COMPUTE_TOKEN=$ACME $COMPUTE instances create --reservation "$active" --command 'sleep 100000' -o json | field id
sleep 4 # the instance runs
cursor=$(curl -sf -H "Authorization: Bearer $ACME" "$COMPUTE_SERVER/v1/events?limit=500" | field nextCursor)
echo "cursor=$cursor (then one more event)"
COMPUTE_TOKEN=$ACME $COMPUTE reservations extend "$booked" --by 1h >/dev/null
