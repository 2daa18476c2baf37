package core

import "regexp"

// nodeIDPattern is the nodes table's CHECK on ids: a DNS-like label of 1 to
// 63 lower-case letters, digits, '.' and '-', starting with a letter or
// digit.
var nodeIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{0,62}$`)

// ValidNodeID says why id cannot be a node's id, or nil. Commands check it
// before they write anything that names a node that may not exist yet (a
// join token, a registration), so that the caller hears what is wrong with
// the id rather than a constraint's name, or gets a token no node can use.
func ValidNodeID(id string) error {
	if !nodeIDPattern.MatchString(id) {
		return Errorf(CodeInvalidArgument,
			"node id %q is invalid: use 1 to 63 lower-case letters, digits, '.' or '-', starting with a letter or digit", Clip(id, 64))
	}
	return nil
}
