package outbox

import (
	"encoding/json"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/google/uuid"

	"github.com/bettercompute/compute/core"
)

// Metadata keys set on every message made from an event, so that watermill
// middleware and handlers can route or log without decoding the payload.
const (
	MetadataType     = "type"
	MetadataSubject  = "subject"
	MetadataTenant   = "tenant"
	MetadataPosition = "position"
)

// NewMessage turns an event into a watermill message. The message UUID is
// the event id, the deduplication key everywhere (SSE id, webhook-id, here),
// so a redelivered event is recognisable as the same message. The payload
// is the public JSON envelope {id, type, tenantId, subject, data, time}, the
// same bytes the SSE stream and webhooks send.
func NewMessage(e Stored) (*message.Message, error) {
	payload, err := json.Marshal(e.Event)
	if err != nil {
		return nil, fmt.Errorf("encode event %s: %w", e.ID, err)
	}
	msg := message.NewMessage(e.ID.String(), payload)
	msg.Metadata.Set(MetadataType, e.Type)
	msg.Metadata.Set(MetadataSubject, e.Subject)
	msg.Metadata.Set(MetadataTenant, e.TenantID)
	msg.Metadata.Set(MetadataPosition, e.Position.String())
	return msg, nil
}

// EventFromMessage decodes a message made by NewMessage back into the event
// and its position.
func EventFromMessage(msg *message.Message) (Stored, error) {
	var e core.Event
	if err := json.Unmarshal(msg.Payload, &e); err != nil {
		return Stored{}, fmt.Errorf("decode message %s: %w", msg.UUID, err)
	}
	if id, err := uuid.Parse(msg.UUID); err != nil || id != e.ID {
		return Stored{}, fmt.Errorf("decode message %s: uuid does not match event id %s", msg.UUID, e.ID)
	}
	pos, err := ParsePosition(msg.Metadata.Get(MetadataPosition))
	if err != nil {
		return Stored{}, fmt.Errorf("decode message %s: %w", msg.UUID, err)
	}
	return Stored{Event: e, Position: pos}, nil
}
