#!/usr/bin/env bash
# Puts live data into a running `compute serve --demo` of an earlier release,
# for an upgrade fixture (see releases_test.go, which says how the database
# is then dumped). COMPUTE (the release's binary), COMPUTE_SERVER, OPS (the
# demo's operator token) and ACME (its tenant token) must be set; a webhook
# receiver must answer 2xx at $HOOK_URL (COMPUTE_WEBHOOK_ALLOW_PRIVATE=true
# on the server for a loopback one). Prints what a release in releases_test.go
# takes: the secrets, the reservation ids and an event cursor.
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
# Longer than 366 days: a release with the ceiling (migration 0038) refuses
# them, and they are "none".
long_booked=$(reserve upg-long-1 1 $((now + 3 * day)) $((now + 800 * day)) '' 2>/dev/null) || long_booked=none
pending=$(reserve upg-pend-1 8 "$now" $((now + 7200)) '') # more GPUs than are free
long_active=$(reserve upg-longact-1 1 "$now" $((now + 700 * day)) '' 2>/dev/null) || long_active=none
COMPUTE_TOKEN=$ACME $COMPUTE reservations release "$released" >/dev/null
echo "active=$active booked=$booked released=$released pending=$pending long_booked=$long_booked long_active=$long_active"

# What a fleet and its tenants had configured (the fixture of bf26bb7 was
# made before these steps): a pool with overcommit ratios, a tainted node
# and a reservation that tolerates it, a preemptible priority class that
# acme may use and a reservation in it, acme's fair share and quotas, and a
# token that expires (where the release has expiring tokens).
ops() { COMPUTE_TOKEN=$OPS $COMPUTE "$@" >/dev/null; }
ops pools create upg-ratio-pool --site demo-site --kind vps-host --cpu-ratio 2 --memory-ratio 1.5 --disk-ratio 1.25
ops nodes taint demo-node-3 dedicated=ml
ops priority-classes create upg-batch --value -100 --preemptible --grace-seconds 60 --description upgrade
ops priority-classes set-allowed acme upg-batch
ops fair-share set acme 4
ops quotas set acme gpu=64 vcpu=512
tolerating=$(COMPUTE_TOKEN=$ACME $COMPUTE reservations create --idempotency-key upg-tol-1 --pool demo-pool --gpus 1 \
	--gpu-model L4-24GB --slot-kind time-slice --toleration dedicated=ml --start "$(iso "$now")" --end "$(iso $((now + day)))" -o json | field id)
batch=$(COMPUTE_TOKEN=$ACME $COMPUTE reservations create --idempotency-key upg-batch-1 --pool demo-pool --gpus 1 \
	--mig-profile 1g.10gb --priority-class upg-batch --start "$(iso "$now")" --end "$(iso $((now + day)))" -o json | field id)
echo "tolerating=$tolerating batch=$batch"
if grep -q -- --expires-in <<<"$($COMPUTE tokens create --help)"; then
	dave=$(COMPUTE_TOKEN=$bob $COMPUTE tokens create --tenant acme --identity dave --role viewer --expires-in 8760h -o json | field token)
	echo "dave=$dave"
fi

sleep 3 # the reservation activates
COMPUTE_TOKEN=$ACME $COMPUTE instances create --reservation "$active" --command 'sleep 100000' -o json | field id
sleep 4 # the instance runs
cursor=$(curl -sf -H "Authorization: Bearer $ACME" "$COMPUTE_SERVER/v1/events?limit=500" | field nextCursor)
echo "cursor=$cursor (then one more event)"
COMPUTE_TOKEN=$ACME $COMPUTE reservations extend "$booked" --by 1h >/dev/null
