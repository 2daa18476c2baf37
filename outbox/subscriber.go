package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

// ErrSubscriberClosed is returned by Deliver once the Subscriber is closed:
// the batch is not saved and is delivered again later.
var ErrSubscriberClosed = errors.New("outbox subscriber closed")

// Subscriber lets in-process handlers consume a sink of the log through
// watermill's Router, with its middleware (Recoverer, Retry, PoisonQueue).
// It is both ends of one durable subscription: a Sink that a Dispatcher
// feeds, and a message.Subscriber the Router reads.
//
// Deliver publishes the batch one message at a time and waits for each Ack
// before the next, so the Router sees the log in order and the cursor is
// saved only after every message of the batch was acked. A Nack redelivers
// the same event (same UUID) after NackDelay. Nothing here holds a database
// transaction while handlers run, unlike watermill-sql's subscriber, which
// would hold the outbox frontier back for every other sink
// (docs/decisions/0002-outbox-reader.md).
type Subscriber struct {
	id     string
	logger *slog.Logger

	// NackDelay is how long a Nacked event waits before it is sent again.
	NackDelay time.Duration

	out       chan *message.Message
	closing   chan struct{}
	closeOnce sync.Once
	sending   sync.Mutex // held by Deliver; Close takes it before closing out

	mu         sync.Mutex
	subscribed bool
}

// NewSubscriber returns the subscriber for sink sinkID. Feed it with
// NewDispatcher(pool, owner, sub, logger); handlers subscribe to the topic
// sinkID.
func NewSubscriber(sinkID string, logger *slog.Logger) *Subscriber {
	if logger == nil {
		logger = slog.Default()
	}
	return &Subscriber{
		id: sinkID, logger: logger.With("sink", sinkID), NackDelay: time.Second,
		out: make(chan *message.Message), closing: make(chan struct{}),
	}
}

// ID is the sink id: the subscription's cursor row and lease.
func (s *Subscriber) ID() string { return s.id }

// Subscribe returns the subscription's messages. topic must be the sink id,
// and there is one subscription per Subscriber: a dispatcher delivers each
// event once, so a second reader would steal messages from the first. The
// channel closes when ctx ends or Close is called.
func (s *Subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if topic != s.id {
		return nil, fmt.Errorf("outbox subscriber %s: cannot subscribe to topic %q", s.id, topic)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subscribed {
		return nil, fmt.Errorf("outbox subscriber %s: already subscribed", s.id)
	}
	s.subscribed = true
	go func() {
		select {
		case <-ctx.Done():
			_ = s.Close()
		case <-s.closing:
		}
	}()
	return s.out, nil
}

// Close ends the subscription. A Deliver in progress returns
// ErrSubscriberClosed without saving its batch.
func (s *Subscriber) Close() error {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.sending.Lock() // wait for Deliver to stop sending on out
		close(s.out)
		s.sending.Unlock()
	})
	return nil
}

// Deliver implements Sink: it sends each event in order and returns once
// all were acked. ctx ends the wait (lease lost, shutdown) and becomes each
// message's context.
func (s *Subscriber) Deliver(ctx context.Context, events []Stored) error {
	s.sending.Lock()
	defer s.sending.Unlock()
	for _, e := range events {
		if err := s.deliverOne(ctx, e); err != nil {
			return err
		}
	}
	return nil
}

func (s *Subscriber) deliverOne(ctx context.Context, e Stored) error {
	for attempt := 1; ; attempt++ {
		msg, err := NewMessage(e)
		if err != nil {
			return err
		}
		msg.SetContext(ctx)
		select {
		case s.out <- msg:
		case <-ctx.Done():
			return fmt.Errorf("send event %s: %w", e.ID, context.Cause(ctx))
		case <-s.closing:
			return ErrSubscriberClosed
		}
		select {
		case <-msg.Acked():
			return nil
		case <-msg.Nacked():
		case <-ctx.Done():
			return fmt.Errorf("wait for ack of event %s: %w", e.ID, context.Cause(ctx))
		case <-s.closing:
			return ErrSubscriberClosed
		}
		s.logger.Warn("event nacked; redelivering", "event", e.ID, "type", e.Type, "attempt", attempt)
		if s.NackDelay > 0 {
			t := time.NewTimer(s.NackDelay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("redeliver event %s: %w", e.ID, context.Cause(ctx))
			case <-s.closing:
				t.Stop()
				return ErrSubscriberClosed
			}
		}
	}
}
