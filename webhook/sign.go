package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/bettercompute/compute/core"
)

// Standard Webhooks header names. Go canonicalises them on the wire
// (Webhook-Id); HTTP header names are case-insensitive.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix marks a signing secret, as Standard Webhooks shows them.
const SecretPrefix = core.WebhookSecretPrefix

// secretBytes is the key length of generated secrets: above the
// specification's floor of 24 bytes.
const secretBytes = 32

// minSecretBytes is the shortest key Verify accepts.
const minSecretBytes = 24

// Tolerance is how far a webhook-timestamp may be from the receiver's clock
// before Verify rejects it: the bound on how long a captured request can be
// replayed.
const Tolerance = 5 * time.Minute

// Errors Verify returns, so consumers can tell a replay from a forgery.
var (
	ErrMissingHeaders   = errors.New("webhook: missing webhook-id, webhook-timestamp or webhook-signature header")
	ErrBadTimestamp     = errors.New("webhook: malformed webhook-timestamp")
	ErrTimestampOutside = errors.New("webhook: webhook-timestamp too far from now")
	ErrNoMatch          = errors.New("webhook: no signature matches")
	ErrBadSecret        = errors.New("webhook: secret is not whsec_<base64> of at least 24 bytes")
)

// NewSecret returns a fresh random signing secret, whsec_<base64 of 32 bytes>.
func NewSecret() string {
	b := make([]byte, secretBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// secretKey decodes a whsec_ secret into its HMAC key.
func secretKey(secret string) ([]byte, error) {
	enc, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, ErrBadSecret
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || len(key) < minSecretBytes {
		return nil, ErrBadSecret
	}
	return key, nil
}

// sign is the v1 signature: base64 HMAC-SHA256 of "{id}.{timestamp}.{body}".
func sign(key []byte, id string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s.%d.", id, ts)
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Sign returns the webhook-signature value for body signed with every one
// of secrets ("v1,<sig> v1,<sig>"): during a rotation both the new and the
// old secret sign, so a consumer holding either accepts the message.
func Sign(secrets []string, id string, ts time.Time, body []byte) (string, error) {
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		key, err := secretKey(s)
		if err != nil {
			return "", err
		}
		sigs = append(sigs, "v1,"+sign(key, id, ts.Unix(), body))
	}
	return strings.Join(sigs, " "), nil
}

// SetHeaders sets the three Standard Webhooks headers on h.
func SetHeaders(h http.Header, secrets []string, id string, ts time.Time, body []byte) error {
	sig, err := Sign(secrets, id, ts, body)
	if err != nil {
		return err
	}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, sig)
	return nil
}

// Verify checks a received webhook: the signature must match body under
// secret, and the timestamp must be within Tolerance of the local clock.
// Consumers call it before trusting anything in the body, and then
// deduplicate by the webhook-id header: the same event may arrive more than
// once.
func Verify(secret string, header http.Header, body []byte) error {
	return VerifyAt(secret, header, body, time.Now())
}

// VerifyAt is Verify against the clock reading now (for tests and replays
// under a simulated clock).
func VerifyAt(secret string, header http.Header, body []byte, now time.Time) error {
	key, err := secretKey(secret)
	if err != nil {
		return err
	}
	id, tsText, sigs := header.Get(HeaderID), header.Get(HeaderTimestamp), header.Get(HeaderSignature)
	if id == "" || tsText == "" || sigs == "" {
		return ErrMissingHeaders
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return ErrBadTimestamp
	}
	if d := now.Sub(time.Unix(ts, 0)); d > Tolerance || d < -Tolerance {
		return ErrTimestampOutside
	}
	want := []byte(sign(key, id, ts, body))
	for _, s := range strings.Fields(sigs) {
		version, sig, ok := strings.Cut(s, ",")
		if ok && version == "v1" && hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return ErrNoMatch
}
