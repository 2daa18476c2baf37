package commands

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// nodeCredentialPrefix marks node credentials, so that a leaked one is
// recognisable and cannot be mistaken for an API token.
const nodeCredentialPrefix = core.NodeCredentialPrefix

// DefaultNodeCredentialGrace is how long a node's earlier credentials keep
// authenticating after it re-joins, unless Config.NodeCredentialGrace
// says otherwise.
const DefaultNodeCredentialGrace = 10 * time.Minute

// KindNodeCredentialGrace is the work-queue kind, keyed by node id, that
// runs when a superseded credential's grace ends: it closes the node's
// session if it was opened with a credential that no longer authenticates.
const KindNodeCredentialGrace = "node.credential-grace"

// NodeCredential is a node credential as issued at join. Token, the secret,
// is shown only here; the database keeps its SHA-256 hash.
type NodeCredential struct {
	ID       string          `json:"id"`
	NodeID   string          `json:"nodeId"`
	Token    string          `json:"token"`
	Position outbox.Position `json:"position"`
}

// NodeCredentialInfo is a node credential as an operator lists it: never
// the secret. RevokedAt is when it was revoked; GraceUntil, for a
// credential superseded by a re-join, is when it stops authenticating.
// Active says whether it authenticates now.
type NodeCredentialInfo struct {
	ID         string     `json:"id"`
	CreatedAt  time.Time  `json:"createdAt"`
	RevokedAt  *time.Time `json:"revokedAt,omitempty"`
	GraceUntil *time.Time `json:"graceUntil,omitempty"`
	Active     bool       `json:"active"`
}

var errUnknownNodeCredential = core.Errorf(core.CodeUnauthenticated, "unknown or revoked node credential")

// ErrNodeRetired is AuthenticateNodeCredential's refusal of a credential
// whose node has been retired: UNAUTHENTICATED like every refused
// credential, told apart so that the gateway can tell the daemon that no
// join token will let it in again (a retired node gets none), and the
// daemon can tell its operator to stop it. Only the holder of a secret
// that was issued learns it; a guess is errUnknownNodeCredential.
var ErrNodeRetired = core.Errorf(core.CodeUnauthenticated, "the node is retired")

func (h *Handlers) nodeCredentialGrace() time.Duration {
	switch {
	case h.cfg.NodeCredentialGrace == 0:
		return DefaultNodeCredentialGrace
	case h.cfg.NodeCredentialGrace < 0:
		return 0
	}
	return h.cfg.NodeCredentialGrace
}

// ListNodeCredentials lists the node's credentials, oldest first (operator
// only). An unknown node is NOT_FOUND.
func (h *Handlers) ListNodeCredentials(ctx context.Context, actor core.Actor, nodeID string) ([]NodeCredentialInfo, error) {
	if err := requireOperator(actor, "nodes.credentials.list"); err != nil {
		return nil, err
	}
	q := db.New(h.Pool)
	if _, err := q.NodeGet(ctx, nodeID); err != nil {
		return nil, pg.Translate(err, "node "+nodeID)
	}
	rows, err := q.NodeCredentialList(ctx, nodeID)
	if err != nil {
		return nil, pg.Translate(err, "node credentials")
	}
	out := make([]NodeCredentialInfo, 0, len(rows))
	for _, r := range rows {
		out = append(out, NodeCredentialInfo{ID: r.ID, CreatedAt: r.CreatedAt, RevokedAt: r.RevokedAt,
			GraceUntil: r.GraceUntil, Active: r.Active})
	}
	return out, nil
}

// AuthenticateNodeCredential returns the node a credential speaks for and
// the credential's id, which the session opened with it records.
// Everything a daemon sends afterwards is applied to that node only. The
// database decides: a revoked credential, or one whose grace is over by
// compute_now(), is UNAUTHENTICATED; ErrNodeRetired when its node is
// retired.
func (s NodeSessions) AuthenticateNodeCredential(ctx context.Context, token string) (nodeID, credentialID string, err error) {
	q := db.New(s.h.Pool)
	hash := hashSecret(token)
	row, err := q.NodeCredentialAuthenticate(ctx, hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", nodeCredentialRefusal(ctx, q, hash)
	}
	if err != nil {
		return "", "", fmt.Errorf("authenticate node: %w", pg.Translate(err, "node credential"))
	}
	return row.NodeID, row.ID, nil
}

// nodeCredentialRefusal is why a credential that does not authenticate is
// refused: ErrNodeRetired for one issued to a node now retired, else
// errUnknownNodeCredential.
func nodeCredentialRefusal(ctx context.Context, q *db.Queries, hash []byte) error {
	n, err := q.NodeCredentialRefusedNode(ctx, hash)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return errUnknownNodeCredential
	case err != nil:
		return fmt.Errorf("authenticate node: %w", pg.Translate(err, "node credential"))
	case core.State(n.State) == core.NodeRetired:
		return ErrNodeRetired
	}
	return errUnknownNodeCredential
}

// closeRevokedSession closes the locked node's session if the credential it
// was opened with no longer authenticates, and moves a connected node to
// disconnected.
func closeRevokedSession(ctx context.Context, q *db.Queries, n db.NodeLivenessLockRow) error {
	epoch, err := q.NodeSessionCloseRevoked(ctx, n.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return pg.Translate(err, "node session")
	}
	return disconnect(ctx, q, n, "revoked", epoch, NoSessionAfter)
}

// appendCredentialRevoked appends node.credential_revoked.
func appendCredentialRevoked(ctx context.Context, q *db.Queries, nodeID, credentialID, reason string, graceUntil *time.Time) (outbox.Position, error) {
	return emit(ctx, q, core.EventNodeCredentialRevoked, "", core.NodeSubject(nodeID), core.NodeCredentialRevokedEventData{
		ID: nodeID, CredentialID: credentialID, Reason: reason, GraceUntil: graceUntil})
}

// nodeSecret is prefix and n random bytes, base64url.
func nodeSecret(prefix string, n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// hashSecret is what the database keeps of a node credential or a join
// token: its SHA-256.
func hashSecret(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}
