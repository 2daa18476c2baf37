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
// Before it trusts the stream's last message, the forwarder checks that
// it is an event of the log (checkInLog): after a restore of the database
// to an earlier point it is not, and nothing is forwarded
// (ErrStreamAheadOfLog) until the stream is purged or deleted.
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
		last, err := lastInStream(s.js, info)
		if err != nil {
			return s.fail(err)
		}
		if err := checkInLog(msg.Context(), s.log, s.cfg.Stream, last); err != nil {
			return s.refuse(err)
		}
		s.aheadOfLog.Store(false)
		s.published = &last.pos
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

// refuse is fail for the check of the stream against the log: a stream
// ahead of the log (ErrStreamAheadOfLog) is said once in the log, at
// error level, and raises compute_nats_stream_ahead_of_log until the
// stream is purged or deleted.
func (s *Sink) refuse(err error) error {
	if errors.Is(err, ErrStreamAheadOfLog) && !s.aheadOfLog.Swap(true) {
		s.logger.Error("JetStream sink stopped: the stream is ahead of the database's log", "stream", s.cfg.Stream, "err", err)
	}
	return s.fail(err)
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
