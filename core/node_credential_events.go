package core

// EventNodeCredentialRevoked: a node credential was revoked, by an operator
// (reason "revoked": it stops authenticating at once and its live session
// is closed) or by a re-join of its node (reason "superseded": it keeps
// authenticating until graceUntil). Carries no version: it does not change
// the node row.
const EventNodeCredentialRevoked = "node.credential_revoked"
