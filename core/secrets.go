package core

import "strings"

// The prefixes of the product's secrets. Each secret is its prefix and
// random bytes in base64 (URL-safe for all but the webhook signing secret,
// which Standard Webhooks writes in standard base64), so a secret is
// recognisable wherever it turns up: pasted into a path where an id
// belongs, into a query string, or quoted back in an error message.
const (
	APITokenPrefix       = "bc_"
	JoinTokenPrefix      = "bcj_"
	NodeCredentialPrefix = "bcn_"
	StreamTicketPrefix   = "st_"
	WebhookSecretPrefix  = "whsec_"
)

// SecretPrefixes are all of them.
var SecretPrefixes = []string{APITokenPrefix, JoinTokenPrefix, NodeCredentialPrefix, StreamTicketPrefix, WebhookSecretPrefix}

// Redacted replaces the body of a secret in text that is logged, measured
// or sent back: bc_[redacted].
const Redacted = "[redacted]"

// RedactSecrets returns s with the body of everything shaped like one of
// the product's secrets replaced by Redacted, the prefix kept so the text
// still says what was there: /v1/tokens/bc_[redacted]. A secret starts at
// the beginning of s or after a character that cannot be part of a word
// (so "first_name" keeps its "st_name"), and runs over the characters of
// its alphabet and percent-escapes (a secret in a raw query string). The
// rest of s is kept as it is. The access log, the error envelope and the
// traces pass what a client sent through it (docs/security.md).
func RedactSecrets(s string) string {
	if !strings.Contains(s, "_") {
		return s
	}
	var b strings.Builder
	done := 0 // s[:done] is written to b, or b is unused
	for i := 0; i < len(s); i++ {
		if s[i] != 'b' && s[i] != 's' && s[i] != 'w' || !secretStarts(s, i) {
			continue
		}
		for _, p := range SecretPrefixes {
			if !strings.HasPrefix(s[i:], p) {
				continue
			}
			n := secretBodyLen(s[i+len(p):], p == WebhookSecretPrefix)
			if n == 0 {
				break
			}
			b.WriteString(s[done : i+len(p)])
			b.WriteString(Redacted)
			done = i + len(p) + n
			i = done - 1
			break
		}
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// ContainsSecret reports whether s holds something shaped like a secret.
func ContainsSecret(s string) bool { return RedactSecrets(s) != s }

// secretStarts reports whether a secret may start at s[i]: at the start,
// after a character that is no letter or digit, or after a percent-escape.
func secretStarts(s string, i int) bool {
	if i == 0 || !isAlnum(s[i-1]) {
		return true
	}
	return i >= 3 && s[i-3] == '%' && isHex(s[i-2]) && isHex(s[i-1])
}

// secretBodyLen is the length of the secret's body at the start of s: the
// characters of base64url (and of standard base64, when std) and
// percent-escapes.
func secretBodyLen(s string, std bool) int {
	n := 0
	for n < len(s) {
		c := s[n]
		switch {
		case isAlnum(c) || c == '-' || c == '_':
			n++
		case std && (c == '+' || c == '/' || c == '='):
			n++
		case c == '%' && n+2 < len(s) && isHex(s[n+1]) && isHex(s[n+2]):
			n += 3
		default:
			return n
		}
	}
	return n
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
