package nodes

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/outbox"
)

// tokenPrefix marks node credentials, so that a leaked one is recognisable
// and cannot be mistaken for an API token.
const tokenPrefix = "bcn_"

// Credential is a node credential as issued at join. Token, the secret, is
// shown only here; the database keeps its SHA-256 hash.
type Credential struct {
	ID       string          `json:"id"`
	NodeID   string          `json:"nodeId"`
	Token    string          `json:"token"`
	Position outbox.Position `json:"position"`
}

// Join issues a new credential for a registered node (operator only) and
// starts its liveness clock: a node that never opens a session becomes
// unreachable NoSessionAfter after its newest join. Earlier credentials
// stay valid until the node is retired, so a daemon that re-joins does not
// lock out one still running.
func (s *Service) Join(ctx context.Context, actor core.Actor, nodeID string) (Credential, error) {
	if !actor.IsOperator() {
		return Credential{}, core.Errorf(core.CodePermissionDenied, "nodes.join requires the operator role")
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return Credential{}, fmt.Errorf("node credential: %w", err)
	}
	token := tokenPrefix + base64.RawURLEncoding.EncodeToString(secret)
	idBytes := make([]byte, 9)
	if _, err := rand.Read(idBytes); err != nil {
		return Credential{}, fmt.Errorf("node credential id: %w", err)
	}
	cred := Credential{ID: "ncr_" + base64.RawURLEncoding.EncodeToString(idBytes), NodeID: nodeID, Token: token}
	err := db.InTx(ctx, s.Pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		n, err := q.NodeLivenessLock(ctx, nodeID)
		if err != nil {
			return db.Translate(err, "node "+nodeID)
		}
		if core.State(n.State) == core.NodeRetired {
			return core.Errorf(core.CodeConflict, "node %s is retired", nodeID)
		}
		if err := q.NodeSessionEnsure(ctx, nodeID); err != nil {
			return db.Translate(err, "node session")
		}
		if err := q.NodeCredentialCreate(ctx, db.NodeCredentialCreateParams{ID: cred.ID, NodeID: nodeID,
			TokenHash: hashToken(token)}); err != nil {
			return db.Translate(err, "node credential")
		}
		if err := workqueue.Enqueue(ctx, q, KindLiveness, nodeID, NoSessionAfter); err != nil {
			return err
		}
		ev, err := core.NewEvent(core.EventNodeJoined, "", core.NodeSubject(nodeID),
			map[string]any{"id": nodeID, "credentialId": cred.ID})
		if err != nil {
			return err
		}
		cred.Position, err = outbox.Append(ctx, q, ev)
		return err
	})
	if err != nil {
		return Credential{}, fmt.Errorf("join node %s: %w", nodeID, err)
	}
	return cred, nil
}

// Authenticate returns the node a credential speaks for. Everything a
// daemon sends afterwards is applied to that node only.
func (s *Service) Authenticate(ctx context.Context, token string) (string, error) {
	row, err := db.New(s.Pool).NodeCredentialAuthenticate(ctx, hashToken(token))
	if errors.Is(err, pgx.ErrNoRows) {
		return "", core.Errorf(core.CodeUnauthenticated, "unknown or revoked node credential")
	}
	if err != nil {
		return "", fmt.Errorf("authenticate node: %w", db.Translate(err, "node credential"))
	}
	return row.NodeID, nil
}

func hashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}
