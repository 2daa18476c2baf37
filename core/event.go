package core

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Event is one entry of the event log, as every consumer sees it: read
// models, the SSE stream, webhooks and in-process subscribers. ID is the
// deduplication key everywhere (SSE id, webhook-id, watermill message UUID).
type Event struct {
	ID       uuid.UUID       `json:"id"`
	Type     string          `json:"type"`
	TenantID string          `json:"tenantId,omitempty"`
	Subject  string          `json:"subject"`
	Data     json.RawMessage `json:"data"`
	Time     time.Time       `json:"time"`
}

// NewEvent builds an event with a fresh id; data is marshalled to JSON.
// Time is set by the database (compute_now()) when the event is appended.
func NewEvent(typ, tenantID, subject string, data any) (Event, error) {
	b, err := json.Marshal(data)
	if err != nil {
		return Event{}, err
	}
	return Event{ID: uuid.New(), Type: typ, TenantID: tenantID, Subject: subject, Data: b}, nil
}
