package cli

import "strings"

// secretPrefixes begin the server's secrets, never an id: API tokens
// (bc_), join tokens (bcj_) and stream tickets (st_). Ids are tok_….
var secretPrefixes = []string{"bc_", "bcj_", "st_"}

// refuseSecretAsID is a usage error when arg, given where a token's id
// belongs, is a secret instead. Sent as the id it would sit in the
// request's path, and so in the server's access log, and the token it
// belongs to would not be the one found: a revoke would leave it valid.
// The message does not repeat it.
func refuseSecretAsID(name, arg string) error {
	for _, p := range secretPrefixes {
		if strings.HasPrefix(arg, p) {
			return usagef("%s: that is a secret (%s…), not a token id (tok_…): nothing was sent. "+
				"Find the id with `compute tokens list`, or `compute whoami` with that token", name, p)
		}
	}
	return nil
}
