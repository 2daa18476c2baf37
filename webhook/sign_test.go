package webhook_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/webhook"
)

func signed(t *testing.T, secrets []string, id string, at time.Time, body []byte) http.Header {
	t.Helper()
	h := http.Header{}
	require.NoError(t, webhook.SetHeaders(h, secrets, id, at, body))
	return h
}

func TestSignatureRoundTrip(t *testing.T) {
	t.Parallel()
	secret := webhook.NewSecret()
	require.True(t, strings.HasPrefix(secret, "whsec_"))
	at := time.Unix(1_900_000_000, 0)
	body := []byte(`{"id":"evt","type":"reservation.booked"}`)
	h := signed(t, []string{secret}, "msg_1", at, body)

	require.Equal(t, "msg_1", h.Get("webhook-id"))
	require.Equal(t, strconv.FormatInt(at.Unix(), 10), h.Get("webhook-timestamp"))
	require.Regexp(t, `^v1,[A-Za-z0-9+/]{43}=$`, h.Get("webhook-signature"))
	require.NoError(t, webhook.VerifyAt(secret, h, body, at))
	require.NoError(t, webhook.VerifyAt(secret, h, body, at.Add(4*time.Minute)), "within tolerance")
}

// The Standard Webhooks reference vector: the same secret, id, timestamp
// and body give the published signature.
func TestSignatureMatchesStandardWebhooksVector(t *testing.T) {
	t.Parallel()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"test": 2432232314}`)
	at := time.Unix(1614265330, 0)
	sig, err := webhook.Sign([]string{secret}, "msg_p5jXN8AQM9LWM0D4loKWxJek", at, body)
	require.NoError(t, err)
	require.Equal(t, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", sig)
}

func TestVerifyRejects(t *testing.T) {
	t.Parallel()
	secret, other := webhook.NewSecret(), webhook.NewSecret()
	at := time.Unix(1_900_000_000, 0)
	body := []byte(`{"a":1}`)
	good := signed(t, []string{secret}, "msg_1", at, body)

	tamper := func(key, value string) http.Header {
		h := good.Clone()
		h.Set(key, value)
		return h
	}
	for name, tc := range map[string]struct {
		secret string
		header http.Header
		body   []byte
		now    time.Time
		want   error
	}{
		"bad signature":      {secret, tamper("webhook-signature", "v1,AAAA"), body, at, webhook.ErrNoMatch},
		"other version":      {secret, tamper("webhook-signature", strings.Replace(good.Get("webhook-signature"), "v1,", "v2,", 1)), body, at, webhook.ErrNoMatch},
		"changed body":       {secret, good, []byte(`{"a":2}`), at, webhook.ErrNoMatch},
		"changed id":         {secret, tamper("webhook-id", "msg_2"), body, at, webhook.ErrNoMatch},
		"changed timestamp":  {secret, tamper("webhook-timestamp", strconv.FormatInt(at.Unix()+1, 10)), body, at, webhook.ErrNoMatch},
		"wrong secret":       {other, good, body, at, webhook.ErrNoMatch},
		"old timestamp":      {secret, good, body, at.Add(5*time.Minute + time.Second), webhook.ErrTimestampOutside},
		"future timestamp":   {secret, good, body, at.Add(-5*time.Minute - time.Second), webhook.ErrTimestampOutside},
		"missing signature":  {secret, tamper("webhook-signature", ""), body, at, webhook.ErrMissingHeaders},
		"garbage timestamp":  {secret, tamper("webhook-timestamp", "yesterday"), body, at, webhook.ErrBadTimestamp},
		"malformed secret":   {"not-a-secret", good, body, at, webhook.ErrBadSecret},
		"too short a secret": {"whsec_c2hvcnQ=", good, body, at, webhook.ErrBadSecret},
	} {
		t.Run(name, func(t *testing.T) {
			require.ErrorIs(t, webhook.VerifyAt(tc.secret, tc.header, tc.body, tc.now), tc.want)
		})
	}
}

// During a rotation both secrets sign, so a consumer still holding the old
// one and one already holding the new one both accept.
func TestRotatedSecretsBothVerify(t *testing.T) {
	t.Parallel()
	newSecret, oldSecret, stranger := webhook.NewSecret(), webhook.NewSecret(), webhook.NewSecret()
	at := time.Unix(1_900_000_000, 0)
	body := []byte(`{}`)
	h := signed(t, []string{newSecret, oldSecret}, "msg_1", at, body)
	require.Len(t, strings.Fields(h.Get("webhook-signature")), 2)
	require.NoError(t, webhook.VerifyAt(newSecret, h, body, at))
	require.NoError(t, webhook.VerifyAt(oldSecret, h, body, at))
	require.ErrorIs(t, webhook.VerifyAt(stranger, h, body, at), webhook.ErrNoMatch)
}

func TestVerifyUsesWallClock(t *testing.T) {
	t.Parallel()
	secret := webhook.NewSecret()
	body := []byte(`{}`)
	require.NoError(t, webhook.Verify(secret, signed(t, []string{secret}, "m", time.Now(), body), body))
	require.ErrorIs(t, webhook.Verify(secret, signed(t, []string{secret}, "m", time.Now().Add(-time.Hour), body), body),
		webhook.ErrTimestampOutside)
}
