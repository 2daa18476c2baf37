package config

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
)

// The checks of settings that a type alone cannot make: a secret's shape,
// an origin's, and settings that need each other (the stream source and
// NATS). Load runs them; each error names the variable to fix.

// validSecret reports whether key, the part of a signing secret after
// whsec_ (ok: the prefix was there), is base64 of at least 24 bytes, as
// Standard Webhooks asks.
func validSecret(key string, ok bool) bool {
	b, err := base64.StdEncoding.DecodeString(key)
	return ok && err == nil && len(b) >= 24
}

// corsOrigins checks COMPUTE_CORS_ORIGINS: each entry an exact origin,
// scheme://host[:port] as a browser sends it in Origin (lower case, no
// path, no trailing slash, no wildcard). Blank entries are dropped.
func corsOrigins(in []string) ([]string, error) {
	var out []string
	for _, o := range in {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.Scheme+"://"+u.Host != o || strings.ToLower(o) != o || strings.Contains(o, "*") {
			return nil, fmt.Errorf("configuration: COMPUTE_CORS_ORIGINS: %q is not an exact origin: use scheme://host[:port] in lower case, such as https://console.example.com", o)
		}
		out = append(out, o)
	}
	return out, nil
}

// Values of COMPUTE_STREAM_SOURCE.
const (
	StreamSourcePostgres = "postgres"
	StreamSourceNATS     = "nats"
)

// checkStreamSource checks COMPUTE_STREAM_SOURCE: nats reads the
// JetStream stream, so it needs the NATS server.
func (c Config) checkStreamSource() error {
	switch c.StreamSource {
	case StreamSourcePostgres:
	case StreamSourceNATS:
		if c.NATSURL == "" {
			return fmt.Errorf("configuration: COMPUTE_STREAM_SOURCE=nats serves event streams from NATS JetStream: set COMPUTE_NATS_URL too")
		}
	default:
		return fmt.Errorf("configuration: COMPUTE_STREAM_SOURCE must be postgres or nats, not %q", c.StreamSource)
	}
	return nil
}

// checkNATS checks the JetStream sink's settings when it is on
// (COMPUTE_NATS_URL set): a stream JetStream would refuse is refused here,
// at start, rather than retried for ever by the sink.
func (c Config) checkNATS() error {
	if c.NATSURL == "" {
		if c.NATSCreds != "" {
			return fmt.Errorf("configuration: COMPUTE_NATS_CREDS is set without COMPUTE_NATS_URL")
		}
		return nil
	}
	switch {
	case c.NATSStream == "" || strings.ContainsAny(c.NATSStream, " \t.*>/\\"):
		return fmt.Errorf("configuration: COMPUTE_NATS_STREAM %q is not a stream name (no spaces, '.', '*', '>', '/' or '\\')", c.NATSStream)
	case c.NATSStorage != "file" && c.NATSStorage != "memory":
		return fmt.Errorf("configuration: COMPUTE_NATS_STORAGE must be file or memory, not %q", c.NATSStorage)
	case c.NATSReplicas < 1 || c.NATSReplicas > 5:
		return fmt.Errorf("configuration: COMPUTE_NATS_REPLICAS must be 1 to 5, not %d", c.NATSReplicas)
	case c.NATSDuplicateWindow <= 0:
		return fmt.Errorf("configuration: COMPUTE_NATS_DUPLICATE_WINDOW must be positive")
	case c.NATSMaxAge < 0 || (c.NATSMaxAge > 0 && c.NATSMaxAge < c.NATSDuplicateWindow):
		return fmt.Errorf("configuration: COMPUTE_NATS_MAX_AGE must be 0 (keep) or at least COMPUTE_NATS_DUPLICATE_WINDOW")
	}
	return nil
}
