package core

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Event is one entry of the event log, as every consumer sees it: read
// models, the SSE stream, webhooks and in-process subscribers. ID is the
// deduplication key everywhere (SSE id, webhook-id, watermill message UUID).
// Its JSON is the envelope {id, type, tenantId, subject, data, time} (see
// MarshalJSON).
type Event struct {
	ID   uuid.UUID `json:"id"`
	Type string    `json:"type"`
	// TenantID is the tenant of a tenant-scoped event, "" for a fleet-wide
	// one (core.EventCatalog says which types are which).
	TenantID string          `json:"tenantId"`
	Subject  string          `json:"subject"`
	Data     json.RawMessage `json:"data"`
	Time     time.Time       `json:"time"`
}

// envelope is Event's JSON: tenantId is always present, null for a
// fleet-wide event.
type envelope struct {
	ID       uuid.UUID       `json:"id"`
	Type     string          `json:"type"`
	TenantID *string         `json:"tenantId"`
	Subject  string          `json:"subject"`
	Data     json.RawMessage `json:"data"`
	Time     time.Time       `json:"time"`
}

// MarshalJSON writes the envelope with "tenantId": null for a fleet-wide
// event (an empty TenantID), as the spec's envelope always has the field.
// Decoding needs no counterpart: null leaves TenantID empty. Types that
// embed Event (outbox.Stored) marshal as the envelope too.
func (e Event) MarshalJSON() ([]byte, error) {
	env := envelope{ID: e.ID, Type: e.Type, Subject: e.Subject, Data: e.Data, Time: e.Time}
	if e.TenantID != "" {
		env.TenantID = &e.TenantID
	}
	return json.Marshal(env)
}

// NewEvent builds an event with a fresh id; data is marshalled to JSON.
// Time is set by the database (compute_now()) when the event is appended.
func NewEvent(typ, tenantID, subject string, data any) (Event, error) {
	b, err := json.Marshal(data)
	if err != nil {
		return Event{}, err
	}
	return Event{ID: NewID(), Type: typ, TenantID: tenantID, Subject: subject, Data: b}, nil
}
