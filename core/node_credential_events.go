package core

import "time"

// EventNodeCredentialRevoked: a node credential was revoked, by an operator
// (reason "revoked": it stops authenticating at once and its live session
// is closed) or by a re-join of its node (reason "superseded": it keeps
// authenticating until graceUntil). Carries no version: it does not change
// the node row.
const EventNodeCredentialRevoked = "node.credential_revoked"

// NodeJoinedEventData is the data of node.joined, written when a node
// credential is issued (the node joined, or re-joined).
type NodeJoinedEventData struct {
	ID string `json:"id"`
	// CredentialID is the issued credential's id, never its secret.
	CredentialID string `json:"credentialId"`
}

// NodeCredentialRevokedEventData is the data of node.credential_revoked,
// written when an operator revokes a node credential or a re-join
// supersedes it.
type NodeCredentialRevokedEventData struct {
	ID string `json:"id"`
	// CredentialID is the revoked credential's id, never its secret.
	CredentialID string `json:"credentialId"`
	// Reason is revoked or superseded.
	Reason string `json:"reason"`
	// GraceUntil is set for superseded: when the credential stops
	// authenticating.
	GraceUntil *time.Time `json:"graceUntil,omitempty"`
}
