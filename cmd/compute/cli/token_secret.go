package cli

import (
	"strings"

	"github.com/bettercompute/compute/core"
)

// refuseSecretAsID is a usage error when arg, given where a token's id
// belongs, is a secret instead (an API token bc_…, a join token, a node
// credential, a stream ticket or a webhook signing secret: core's
// SecretPrefixes). Sent as the id it would sit in the request's path (the
// server redacts it from its log, but not every proxy on the way does),
// and the token it belongs to would not be the one found: a revoke would
// leave it valid. The message does not repeat it.
func refuseSecretAsID(name, arg string) error {
	for _, p := range core.SecretPrefixes {
		if strings.HasPrefix(arg, p) {
			return usagef("%s: that is a secret (%s…), not a token id (tok_…): nothing was sent. "+
				"Find the id with `compute tokens list`, or `compute whoami` with that token", name, p)
		}
	}
	return nil
}
