package commands

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// CreatePriorityClass adds a priority class (docs/concepts/priority.md).
// Value orders classes (higher is more important); Preemptible says whether
// reservations of the class may be displaced by a strictly higher value;
// GraceSeconds is the time a displaced workload gets between SIGTERM and
// the kill (nil: core.DefaultGraceSeconds). IsDefault makes it the class a
// reservation naming none gets; there is one default class already
// (standard, from the migration), and a second is CONFLICT.
// IdempotencyKey is optional.
type CreatePriorityClass struct {
	Name           string `json:"name"`
	Value          int64  `json:"value"`
	Preemptible    bool   `json:"preemptible"`
	GraceSeconds   *int64 `json:"graceSeconds,omitempty"`
	Description    string `json:"description,omitempty"`
	IsDefault      bool   `json:"isDefault,omitempty"`
	IdempotencyKey string `json:"-"`
}

// PriorityClassResult is a priority class as written, and the position of
// its event.
type PriorityClassResult struct {
	Name         string          `json:"name"`
	Value        int32           `json:"value"`
	Preemptible  bool            `json:"preemptible"`
	GraceSeconds int32           `json:"graceSeconds"`
	Description  string          `json:"description"`
	IsDefault    bool            `json:"isDefault"`
	Version      int64           `json:"version"`
	CreatedAt    time.Time       `json:"createdAt"`
	Position     outbox.Position `json:"position"`
}

// validate checks the request and returns the grace to store.
func (c CreatePriorityClass) validate() (int32, error) {
	bad := func(f string, a ...any) (int32, error) { return 0, core.Errorf(core.CodeInvalidArgument, f, a...) }
	if !core.ValidPriorityClassName(c.Name) {
		return bad("priority class name %q is invalid: use 1 to 63 lower-case letters, digits or '-', "+
			"starting and ending with a letter or digit", c.Name)
	}
	if c.Value < core.MinPriority || c.Value > core.MaxPriority {
		return bad("priority class value %d is out of range: from %d to %d", c.Value, core.MinPriority, core.MaxPriority)
	}
	grace := int64(core.DefaultGraceSeconds)
	if c.GraceSeconds != nil {
		grace = *c.GraceSeconds
	}
	if grace < 0 || grace > core.MaxGraceSeconds {
		return bad("graceSeconds %d is out of range: from 0 to %d", grace, core.MaxGraceSeconds)
	}
	// Every role lists classes: a description reaches tenants' consoles and
	// terminals, so it is printable text, as a webhook's is (core.Printable).
	if len(c.Description) > core.MaxPriorityClassDescription || !core.Printable(c.Description) {
		return bad("a priority class's description is printable UTF-8 text (no control or format character) of at most %d bytes",
			core.MaxPriorityClassDescription)
	}
	return int32(grace), nil
}

// CreatePriorityClass runs priority-classes.create (operator only): it
// inserts the class and appends priority_class.created in one transaction.
// A name that exists is CONFLICT, and so is a second default class.
func (h *Handlers) CreatePriorityClass(ctx context.Context, actor core.Actor, cmd CreatePriorityClass) (PriorityClassResult, error) {
	if err := requireOperator(actor, "priority-classes.create"); err != nil {
		return PriorityClassResult{}, err
	}
	grace, err := cmd.validate()
	if err != nil {
		return PriorityClassResult{}, keyReusedFirst(ctx, h, actor, cmd.IdempotencyKey, "priority-classes.create", cmd, err)
	}
	res, err := idempotent(ctx, h, actor, cmd.IdempotencyKey, "priority-classes.create", cmd,
		func(ctx context.Context, tx pgx.Tx) (PriorityClassResult, error) {
			return createPriorityClass(ctx, db.New(tx), actor, cmd, grace)
		})
	if err != nil {
		return PriorityClassResult{}, fmt.Errorf("create priority class %s: %w", cmd.Name, err)
	}
	return res, nil
}

func createPriorityClass(ctx context.Context, q *db.Queries, actor core.Actor, cmd CreatePriorityClass, grace int32) (PriorityClassResult, error) {
	what := "priority class " + cmd.Name
	if cmd.IsDefault {
		// Changing the default is not supported yet: the default class
		// stays the one there is (a concurrent create that slipped past
		// this check breaks priority_classes_one_default: CONFLICT too).
		cur, err := q.PriorityClassDefault(ctx)
		if err != nil {
			return PriorityClassResult{}, pg.Translate(err, what)
		}
		if len(cur) > 0 {
			return PriorityClassResult{}, core.Errorf(core.CodeConflict,
				"priority class %s is the default class already: there can be one default class", cur[0])
		}
	}
	c, err := q.PriorityClassCreate(ctx, db.PriorityClassCreateParams{Name: cmd.Name, Value: int32(cmd.Value),
		Preemptible: cmd.Preemptible, GraceSeconds: grace, Description: cmd.Description, IsDefault: cmd.IsDefault,
		CreatedBy: actor.Identity})
	if errors.Is(err, pgx.ErrNoRows) {
		return PriorityClassResult{}, core.Errorf(core.CodeConflict, "priority class %s already exists", cmd.Name)
	}
	if err != nil {
		return PriorityClassResult{}, pg.Translate(err, what)
	}
	pos, err := emit(ctx, q, core.EventPriorityClassCreated, "", core.PriorityClassSubject(c.Name),
		core.PriorityClassEventData{Name: c.Name, Value: c.Value, Preemptible: c.Preemptible, GraceSeconds: c.GraceSeconds,
			Description: c.Description, IsDefault: c.IsDefault, Version: c.Version})
	return PriorityClassResult{Name: c.Name, Value: c.Value, Preemptible: c.Preemptible, GraceSeconds: c.GraceSeconds,
		Description: c.Description, IsDefault: c.IsDefault, Version: c.Version, CreatedAt: c.CreatedAt.UTC(),
		Position: pos}, err
}
