package natsink

import (
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/bettercompute/compute/outbox"
)

// streamConfig is the stream the sink publishes to: every subject under
// SubjectPrefix, limits retention (a log that consumers read at their own
// pace, not a work queue), the oldest messages dropped past MaxAge, and
// Nats-Msg-Id deduplication over DuplicateWindow.
func (c Config) streamConfig() *nats.StreamConfig {
	storage := nats.FileStorage
	if c.Storage == StorageMemory {
		storage = nats.MemoryStorage
	}
	return &nats.StreamConfig{
		Name:        c.Stream,
		Description: "Every event of the compute control plane's outbox, in log order",
		Subjects:    []string{SubjectPrefix + ".>"},
		Retention:   nats.LimitsPolicy,
		Discard:     nats.DiscardOld,
		MaxAge:      c.MaxAge,
		Storage:     storage,
		Replicas:    c.Replicas,
		Duplicates:  c.DuplicateWindow,
	}
}

// ensureStream creates the stream, or updates it to the configuration
// (JetStream refuses some changes, such as the storage: that error stays
// until the setting or the stream is changed by hand).
func ensureStream(js nats.JetStreamManager, sc *nats.StreamConfig) (*nats.StreamInfo, error) {
	_, err := js.StreamInfo(sc.Name)
	switch {
	case errors.Is(err, nats.ErrStreamNotFound):
		info, err := js.AddStream(sc)
		if err != nil {
			return nil, fmt.Errorf("create stream %s: %w", sc.Name, err)
		}
		return info, nil
	case err != nil:
		return nil, fmt.Errorf("read stream %s: %w", sc.Name, err)
	}
	info, err := js.UpdateStream(sc)
	if err != nil {
		return nil, fmt.Errorf("update stream %s: %w", sc.Name, err)
	}
	return info, nil
}

// lastInStream is the stream's last message: the newest event known to be
// in the stream, and, since the sink publishes in log order and waits for
// each acknowledgement, every earlier one too. Zero for an empty stream or
// a last message that is gone or not the sink's.
func lastInStream(js nats.JetStreamManager, info *nats.StreamInfo) (lastMessage, error) {
	if info.State.LastSeq == 0 {
		return lastMessage{}, nil
	}
	m, err := js.GetMsg(info.Config.Name, info.State.LastSeq)
	if errors.Is(err, nats.ErrMsgNotFound) {
		return lastMessage{}, nil
	}
	if err != nil {
		return lastMessage{}, fmt.Errorf("read last message of stream %s: %w", info.Config.Name, err)
	}
	pos, err := outbox.ParsePosition(m.Header.Get(outbox.MetadataPosition))
	if err != nil {
		return lastMessage{}, nil
	}
	id, err := uuid.Parse(m.Header.Get(nats.MsgIdHdr))
	if err != nil {
		return lastMessage{}, nil
	}
	return lastMessage{seq: m.Sequence, id: id, pos: pos}, nil
}
