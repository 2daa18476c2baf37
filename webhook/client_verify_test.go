package webhook_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/client"
	"github.com/bettercompute/compute/webhook"
)

// The client's verifier accepts exactly what the server signs and rejects
// what the server's own Verify rejects, for the same reason. It lives here,
// not in client, because client and its tests import nothing of the server
// (devtools/layers holds that rule); the server's tests may import
// the client.
func TestVerifyWebhookAgreesWithTheServer(t *testing.T) {
	t.Parallel()
	secret, other := webhook.NewSecret(), webhook.NewSecret()
	at := time.Unix(1_760_000_000, 0)
	body := []byte(`{"type":"reservation.booked","data":{"id":"rsv_1"}}`)
	signed := func(secrets ...string) http.Header {
		h := http.Header{}
		require.NoError(t, webhook.SetHeaders(h, secrets, "msg_1", at, body))
		return h
	}
	cases := []struct {
		name   string
		secret string
		header http.Header
		body   []byte
		now    time.Time
		want   error
	}{
		{"signed", secret, signed(secret), body, at, nil},
		{"during a rotation either secret verifies", secret, signed(other, secret), body, at.Add(time.Minute), nil},
		{"another secret", other, signed(secret), body, at, client.ErrWebhookNoMatch},
		{"changed body", secret, signed(secret), []byte(`{"type":"reservation.released"}`), at, client.ErrWebhookNoMatch},
		{"too old", secret, signed(secret), body, at.Add(6 * time.Minute), client.ErrWebhookTimestampOutside},
		{"from the future", secret, signed(secret), body, at.Add(-6 * time.Minute), client.ErrWebhookTimestampOutside},
		{"no headers", secret, http.Header{}, body, at, client.ErrWebhookMissingHeaders},
		{"bad secret", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", signed(secret), body, at, client.ErrWebhookBadSecret},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := client.VerifyWebhookAt(c.secret, c.header, c.body, c.now)
			if c.want == nil {
				require.NoError(t, got)
			} else {
				require.ErrorIs(t, got, c.want)
			}
			server := webhook.VerifyAt(c.secret, c.header, c.body, c.now)
			require.Equal(t, c.want == nil, server == nil, "the server's Verify disagrees: %v", server)
		})
	}
	h := signed(secret)
	h.Set(client.WebhookHeaderTimestamp, "yesterday")
	require.ErrorIs(t, client.VerifyWebhookAt(secret, h, body, at), client.ErrWebhookBadTimestamp)
}
