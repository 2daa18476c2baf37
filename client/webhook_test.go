package client_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/client"
)

// The Standard Webhooks reference vector: the published secret, id,
// timestamp, body and signature verify. That the client agrees with the
// server's signer on every case is checked on the server's side
// (webhook/client_verify_test.go): this package's tests import nothing of
// the server.
const (
	vectorSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTS     = 1614265330
	vectorBody   = `{"test": 2432232314}`
	vectorSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func vectorHeader(sigs string) http.Header {
	h := http.Header{}
	h.Set(client.WebhookHeaderID, vectorID)
	h.Set(client.WebhookHeaderTimestamp, strconv.Itoa(vectorTS))
	h.Set(client.WebhookHeaderSignature, sigs)
	return h
}

func TestVerifyWebhookStandardVector(t *testing.T) {
	t.Parallel()
	at := time.Unix(vectorTS, 0)
	other := "whsec_" + base64.StdEncoding.EncodeToString([]byte("another secret of 32 bytes......"))
	cases := []struct {
		name   string
		secret string
		header http.Header
		body   string
		now    time.Time
		want   error
	}{
		{"the published signature", vectorSecret, vectorHeader(vectorSig), vectorBody, at, nil},
		{"one of two signatures (a rotation)", vectorSecret, vectorHeader("v1,bm90IGl0 " + vectorSig), vectorBody, at.Add(4 * time.Minute), nil},
		{"another secret", other, vectorHeader(vectorSig), vectorBody, at, client.ErrWebhookNoMatch},
		{"changed body", vectorSecret, vectorHeader(vectorSig), `{"test": 2432232315}`, at, client.ErrWebhookNoMatch},
		{"another version", vectorSecret, vectorHeader("v2," + vectorSig[3:]), vectorBody, at, client.ErrWebhookNoMatch},
		{"too old", vectorSecret, vectorHeader(vectorSig), vectorBody, at.Add(5*time.Minute + time.Second), client.ErrWebhookTimestampOutside},
		{"from the future", vectorSecret, vectorHeader(vectorSig), vectorBody, at.Add(-5*time.Minute - time.Second), client.ErrWebhookTimestampOutside},
		{"no headers", vectorSecret, http.Header{}, vectorBody, at, client.ErrWebhookMissingHeaders},
		{"no whsec_ prefix", vectorSecret[len("whsec_"):], vectorHeader(vectorSig), vectorBody, at, client.ErrWebhookBadSecret},
		{"a short secret", "whsec_" + base64.StdEncoding.EncodeToString([]byte("short")), vectorHeader(vectorSig), vectorBody, at, client.ErrWebhookBadSecret},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := client.VerifyWebhookAt(c.secret, c.header, []byte(c.body), c.now)
			if c.want == nil {
				require.NoError(t, got)
			} else {
				require.ErrorIs(t, got, c.want)
			}
		})
	}
	h := vectorHeader(vectorSig)
	h.Set(client.WebhookHeaderTimestamp, "yesterday")
	require.ErrorIs(t, client.VerifyWebhookAt(vectorSecret, h, []byte(vectorBody), at), client.ErrWebhookBadTimestamp)
}

// VerifyWebhook reads the wall clock: a delivery signed now verifies, one
// signed an hour ago does not.
func TestVerifyWebhookUsesWallClock(t *testing.T) {
	t.Parallel()
	key, err := base64.StdEncoding.DecodeString(vectorSecret[len("whsec_"):])
	require.NoError(t, err)
	signedAt := func(ts time.Time) http.Header {
		m := hmac.New(sha256.New, key)
		fmt.Fprintf(m, "%s.%d.%s", vectorID, ts.Unix(), vectorBody)
		h := vectorHeader("v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)))
		h.Set(client.WebhookHeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
		return h
	}
	require.NoError(t, client.VerifyWebhook(vectorSecret, signedAt(time.Now()), []byte(vectorBody)))
	require.ErrorIs(t, client.VerifyWebhook(vectorSecret, signedAt(time.Now().Add(-time.Hour)), []byte(vectorBody)), client.ErrWebhookTimestampOutside)
}
