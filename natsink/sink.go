// Package natsink forwards the event log to NATS JetStream: a handler of
// the process's watermill Router, fed by an outbox.Subscriber under the
// dispatcher's lease and cursor, publishes every event with a synchronous
// PubAck before the next, so the cursor passes only events JetStream
// stored. Source reads the stream back, in log order, for the SSE broker of
// an API process with COMPUTE_STREAM_SOURCE=nats. See
// docs/operations/scale-out.md and
// docs/decisions/0011-nats-jetstream-sink.md.
package natsink

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"
	natsgo "github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/metrics"
	"github.com/bettercompute/compute/outbox"
)

// SinkID names the sink: its outbox cursor, its lease
// (singleton:outbox-dispatch:jetstream) and its Router handler.
const SinkID = "jetstream"

// Storage kinds of Config.Storage.
const (
	StorageFile   = "file"
	StorageMemory = "memory"
)

// Defaults of Config: a zero field means these.
const (
	DefaultStream          = "COMPUTE_EVENTS"
	DefaultStorage         = StorageFile
	DefaultReplicas        = 1
	DefaultDuplicateWindow = 2 * time.Minute
	DefaultReconnectWait   = time.Second
	DefaultPublishTimeout  = 5 * time.Second
	DefaultRetryInitial    = 250 * time.Millisecond
	DefaultRetryMax        = 15 * time.Second
)

// DefaultMaxAge is COMPUTE_NATS_MAX_AGE's default, the event log's own
// retention; a zero MaxAge keeps messages for ever.
const DefaultMaxAge = 720 * time.Hour

// Config is where and how the sink publishes. The stream settings are
// applied at each (re)start of publishing.
type Config struct {
	// URL is the NATS server (several comma separated).
	URL string
	// Creds is a credentials file (JWT and nkey seed); empty: none.
	Creds string
	// Name names the connection on the server (its connz), e.g. the
	// process's lease owner.
	Name string

	Stream          string
	Storage         string // StorageFile or StorageMemory
	Replicas        int
	MaxAge          time.Duration // 0: no limit
	DuplicateWindow time.Duration

	// ReconnectWait is the pause between reconnection attempts, which
	// never stop.
	ReconnectWait time.Duration
	// PublishTimeout bounds the wait for one PubAck.
	PublishTimeout time.Duration
	// RetryInitial and RetryMax bound the back-off between publish
	// attempts of one event (outbox.MustDeliver).
	RetryInitial, RetryMax time.Duration
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if c.Stream == "" {
		c.Stream = DefaultStream
	}
	if c.Storage == "" {
		c.Storage = DefaultStorage
	}
	if c.Replicas <= 0 {
		c.Replicas = DefaultReplicas
	}
	def(&c.DuplicateWindow, DefaultDuplicateWindow)
	def(&c.ReconnectWait, DefaultReconnectWait)
	def(&c.PublishTimeout, DefaultPublishTimeout)
	def(&c.RetryInitial, DefaultRetryInitial)
	def(&c.RetryMax, DefaultRetryMax)
	return c
}

// Sink is one process's connection to NATS and its forwarder. Connect
// never waits for the server: a server that is down at start, or goes
// down later, only holds the forwarder back until it is reachable again.
type Sink struct {
	cfg    Config
	conn   *natsgo.Conn
	js     natsgo.JetStreamManager
	pub    message.Publisher
	logger *slog.Logger

	// mu is held by forward, across its publish: one event at a time.
	mu sync.Mutex
	// published is the newest event known to be in the stream; nil:
	// unknown (at start, and after a failed publish, which may have been
	// stored), to be read from the stream before the next publish.
	published *outbox.Position

	// log is the database the forwarded events come from, to check the
	// stream's last message against (set by Route).
	log *db.Queries
	// aheadOfLog is true while the stream's last message is no event of
	// the log (ErrStreamAheadOfLog): compute_nats_stream_ahead_of_log.
	aheadOfLog atomic.Bool

	// failure is the last attempt's error, nil after a success; it has a
	// lock of its own so that /readyz never waits for a publish.
	failureMu sync.Mutex
	failure   error
}

// Connect starts connecting to cfg.URL in the background and returns the
// sink. reg (nil: none) receives compute_nats_connected and, through the
// Router, the publish timings.
func Connect(cfg Config, logger *slog.Logger, reg prometheus.Registerer) (*Sink, error) {
	cfg = cfg.withDefaults()
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("sink", SinkID)
	conn, err := connect(cfg.URL, cfg.Creds, cfg.Name, cfg.ReconnectWait, logger)
	if err != nil {
		return nil, err
	}
	s := &Sink{cfg: cfg, conn: conn, logger: logger}
	if s.js, err = conn.JetStream(natsgo.MaxWait(cfg.PublishTimeout)); err != nil {
		conn.Close()
		return nil, fmt.Errorf("NATS JetStream: %w", err)
	}
	s.pub, err = nats.NewPublisherWithNatsConn(conn, nats.PublisherPublishConfig{
		Marshaler:         &nats.NATSMarshaler{},
		SubjectCalculator: nats.DefaultSubjectCalculator,
		JetStream: nats.JetStreamConfig{
			TrackMsgId:     true, // Nats-Msg-Id: the event id
			ConnectOptions: []natsgo.JSOpt{natsgo.MaxWait(cfg.PublishTimeout)},
		},
	}, outbox.WatermillLogger(logger))
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("NATS publisher: %w", err)
	}
	if reg != nil {
		if s.pub, err = outbox.RouterMetrics(reg).DecoratePublisher(s.pub); err != nil {
			conn.Close()
			return nil, err
		}
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: metrics.NameNATSConnected,
			Help: "1 while this process's JetStream sink is connected to NATS, else 0.",
		}, func() float64 {
			if conn.IsConnected() {
				return 1
			}
			return 0
		}))
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: metrics.NameNATSStreamAheadOfLog,
			Help: "1 while this process's JetStream sink refuses to forward because the stream holds events the database's log does not have (a restore of the database), else 0.",
		}, func() float64 {
			if s.aheadOfLog.Load() {
				return 1
			}
			return 0
		}))
	}
	return s, nil
}

// Route adds the forwarder to r as the handler SinkID, reading sub (the
// outbox.Subscriber a dispatcher feeds) of the log in pool, against which
// the stream's last message is checked. It must never skip an event, so
// its middleware is outbox.MustDeliver and no poison queue.
func (s *Sink) Route(r *message.Router, sub message.Subscriber, pool *pgxpool.Pool) {
	s.log = db.New(pool)
	h := r.AddConsumerHandler(SinkID, SinkID, sub, s.forward)
	h.AddMiddleware(outbox.MustDeliver(s.cfg.RetryInitial, s.cfg.RetryMax, s.logger))
}

// Health is nil while the sink is connected and its last publish (if any)
// succeeded; otherwise why not, for /readyz.
func (s *Sink) Health() error {
	if !s.conn.IsConnected() {
		return fmt.Errorf("not connected to NATS (%s)", s.conn.Status())
	}
	s.failureMu.Lock()
	defer s.failureMu.Unlock()
	return s.failure
}

// Close closes the connection. Call it after the Router has stopped.
func (s *Sink) Close() error { return s.pub.Close() }
