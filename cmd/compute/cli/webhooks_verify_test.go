package cli

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// `webhooks verify` says a good signature is valid: a sentence in a
// table's place, {"valid": true} to -o json (it printed the sentence there
// too, which a script parsing JSON could not read).
func TestWebhooksVerifyAnswersInTheFormatAskedFor(t *testing.T) {
	t.Parallel()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	id, ts, body := "msg_1", strconv.FormatInt(time.Now().Unix(), 10), `{"type":"reservation.booked"}`
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + body))
	sig := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	verify := []string{"webhooks", "verify", "--secret", secret, "--id", id, "--timestamp", ts, "--signature", sig}

	inv := newInvocation(t)
	inv.stdin = body
	out, errOut, code := inv.run(verify...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "signature valid\n", out)
	out, errOut, code = inv.run(append(verify, "-o", "json")...)
	require.Equal(t, 0, code, errOut)
	require.JSONEq(t, `{"valid": true}`, out)

	bad := append([]string{}, verify...)
	bad[7] = "yesterday" // --timestamp
	_, errOut, code = inv.run(bad...)
	require.Equal(t, 2, code, "a malformed --timestamp is bad input: %s", errOut)
	require.Contains(t, errOut, "--timestamp")
}
