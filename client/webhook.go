package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks 1.0 headers of every delivery. HTTP header names
// are case-insensitive; Go canonicalises them (Webhook-Id).
const (
	WebhookHeaderID        = "webhook-id"
	WebhookHeaderTimestamp = "webhook-timestamp"
	WebhookHeaderSignature = "webhook-signature"
)

// WebhookTolerance is how far a delivery's webhook-timestamp may be from
// the receiver's clock: the bound on how long a captured request can be
// replayed.
const WebhookTolerance = 5 * time.Minute

// Errors of VerifyWebhook, so that a consumer can tell a replay or a
// misconfiguration from a forgery.
var (
	ErrWebhookMissingHeaders   = errors.New("webhook: missing webhook-id, webhook-timestamp or webhook-signature header")
	ErrWebhookBadTimestamp     = errors.New("webhook: malformed webhook-timestamp")
	ErrWebhookTimestampOutside = errors.New("webhook: webhook-timestamp too far from now")
	ErrWebhookNoMatch          = errors.New("webhook: no signature matches")
	ErrWebhookBadSecret        = errors.New("webhook: secret is not whsec_<base64> of at least 24 bytes")
)

// VerifyWebhook checks a delivery received from the control plane: one of
// the webhook-signature values ("v1,<base64>", space separated: during a
// secret rotation both secrets sign) must be the HMAC-SHA256 of
// "<webhook-id>.<webhook-timestamp>.<body>" under secret (the endpoint's
// whsec_… secret), and the timestamp within WebhookTolerance of now. Call
// it on the raw body before trusting anything in it, then deduplicate by
// webhook-id: the same event may arrive more than once.
//
// It is the server's own check (package webhook's Verify, which a test
// holds it to), written again here so that a consumer does not link the
// server.
func VerifyWebhook(secret string, header http.Header, body []byte) error {
	return VerifyWebhookAt(secret, header, body, time.Now())
}

// VerifyWebhookAt is VerifyWebhook against the clock reading now (for
// replays and tests).
func VerifyWebhookAt(secret string, header http.Header, body []byte, now time.Time) error {
	key, err := webhookKey(secret)
	if err != nil {
		return err
	}
	id, tsText, sigs := header.Get(WebhookHeaderID), header.Get(WebhookHeaderTimestamp), header.Get(WebhookHeaderSignature)
	if id == "" || tsText == "" || sigs == "" {
		return ErrWebhookMissingHeaders
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return ErrWebhookBadTimestamp
	}
	if d := now.Sub(time.Unix(ts, 0)); d > WebhookTolerance || d < -WebhookTolerance {
		return ErrWebhookTimestampOutside
	}
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s.%d.", id, ts)
	m.Write(body)
	want := []byte(base64.StdEncoding.EncodeToString(m.Sum(nil)))
	for _, s := range strings.Fields(sigs) {
		version, sig, ok := strings.Cut(s, ",")
		if ok && version == "v1" && hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return ErrWebhookNoMatch
}

// webhookKey decodes a whsec_ secret into its HMAC key.
func webhookKey(secret string) ([]byte, error) {
	enc, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return nil, ErrWebhookBadSecret
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(key) < 24 {
		return nil, ErrWebhookBadSecret
	}
	return key, nil
}
