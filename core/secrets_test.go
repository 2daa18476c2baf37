package core_test

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/bettercompute/compute/core"
)

func TestRedactSecrets(t *testing.T) {
	for in, want := range map[string]string{
		"":                                   "",
		"/v1/tokens/tok_0123abcd":            "/v1/tokens/tok_0123abcd",
		"/v1/tokens/bc_AbC-d_e9":             "/v1/tokens/bc_[redacted]",
		"/v1/nodes/n1/join-tokens/bcj_x/y":   "/v1/nodes/n1/join-tokens/bcj_[redacted]/y",
		"/v1/nodes/n1/credentials/bcn_Zz9":   "/v1/nodes/n1/credentials/bcn_[redacted]",
		"ticket=st_abc&limit=5":              "ticket=st_[redacted]&limit=5",
		"/v1/webhook-endpoints/whsec_a+b/c=": "/v1/webhook-endpoints/whsec_[redacted]",
		"secret=whsec_a%2Bb%3D&x=1":          "secret=whsec_[redacted]&x=1",
		"id=%2Fbc_abc":                       "id=%2Fbc_[redacted]",
		`malformed cursor "bc_abc…"`:         `malformed cursor "bc_[redacted]…"`,
		"token bc_one and bc_two not found":  "token bc_[redacted] and bc_[redacted] not found",
		"Bearer bc_abc":                      "Bearer bc_[redacted]",
		// Words that merely contain a prefix, and prefixes with nothing
		// after them, are left alone.
		"first_name, abc_def, last_st_x": "first_name, abc_def, last_st_[redacted]",
		"bc_":                            "bc_",
		"bc_/":                           "bc_/",
		"st_ is a prefix":                "st_ is a prefix",
		"we_0123 ins_x alc_y rsv_z":      "we_0123 ins_x alc_y rsv_z",
	} {
		require.Equal(t, want, core.RedactSecrets(in), "%q", in)
		require.Equal(t, want != in, core.ContainsSecret(in), "%q", in)
	}
}

// Whatever surrounds a secret minted the way the server mints them, raw or
// percent-encoded as in a query string, no byte sequence of its body
// survives redaction, and the text around it does.
func TestRedactSecretsLeavesNoSecret(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		prefix := rapid.SampledFrom(core.SecretPrefixes).Draw(t, "prefix")
		raw := rapid.SliceOfN(rapid.Byte(), 24, 48).Draw(t, "bytes")
		secret := prefix + base64.RawURLEncoding.EncodeToString(raw)
		if prefix == core.WebhookSecretPrefix {
			secret = prefix + base64.StdEncoding.EncodeToString(raw)
		}
		if rapid.Bool().Draw(t, "query-escaped") {
			secret = url.QueryEscape(secret)
		}
		before := rapid.SampledFrom([]string{"", "/v1/tokens/", "?ticket=", "&x=", "token ", `"`, "(", "%2F"}).Draw(t, "before")
		after := rapid.SampledFrom([]string{"", "?a=1", "&b=2", " not found", `"`, ")", "…", ";"}).Draw(t, "after")
		got := core.RedactSecrets(before + secret + after)
		require.Equal(t, before+prefix+core.Redacted+after, got)
		body := strings.TrimPrefix(secret, prefix)
		for n := 8; n <= len(body); n++ {
			require.NotContains(t, got, body[len(body)-n:])
		}
	})
}
