package natsink

import (
	"errors"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/bettercompute/compute/outbox"
)

// forward is the Router handler: it publishes one event (a message made
// by outbox.NewMessage) to Subject(tenant, type) and returns once
// JetStream acknowledged it, so the dispatcher saves its cursor only past
// stored events. The message goes as watermill-nats' NATSMarshaler writes
// it: the payload is the event's JSON envelope (the bytes SSE and webhooks
// send), the headers are Nats-Msg-Id and _watermill_message_uuid (the
// event id) and the message's metadata: type, subject, tenant, position.
//
// Two guards keep every event in the stream once. An event at or before
// the newest one known to be in the stream is acked without publishing:
// after a restart or a failed publish that position is read back from
// the stream's last message, so a batch delivered again long after its
// first delivery (every dispatcher down for longer than the duplicate
// window) adds nothing. Within the window, JetStream itself drops a second
// copy by its Nats-Msg-Id: a zombie dispatcher still publishing after a
// takeover, or a publish whose acknowledgement was lost.
func (s *Sink) forward(msg *message.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	pos, err := outbox.ParsePosition(msg.Metadata.Get(outbox.MetadataPosition))
	if err == nil && pos.IsZero() {
		err = errors.New("none")
	}
	if err != nil { // not a message of an outbox.Subscriber: a bug, never skipped
		return s.fail(fmt.Errorf("message %s: outbox position: %w", msg.UUID, err))
	}
	if s.published == nil {
		info, err := ensureStream(s.js, s.cfg.streamConfig())
		if err != nil {
			return s.fail(err)
		}
		last, err := lastPosition(s.js, info)
		if err != nil {
			return s.fail(err)
		}
		s.published = &last
		s.setFailure(nil)
	}
	if !s.published.Less(pos) {
		return nil // already in the stream
	}
	subject := Subject(msg.Metadata.Get(outbox.MetadataTenant), msg.Metadata.Get(outbox.MetadataType))
	if err := s.pub.Publish(subject, msg); err != nil {
		s.published = nil // it may have been stored all the same
		return s.fail(fmt.Errorf("publish event %s to %s: %w", msg.UUID, subject, err))
	}
	s.published = &pos
	s.setFailure(nil)
	return nil
}

// fail records err for Health and returns it (to the Router, which logs
// it), saying first when the connection is down (notConnected).
func (s *Sink) fail(err error) error {
	err = notConnected(s.conn, err)
	s.setFailure(err)
	return err
}

func (s *Sink) setFailure(err error) {
	s.failureMu.Lock()
	defer s.failureMu.Unlock()
	s.failure = err
}
