package natsink

import (
	"fmt"
	"log/slog"
	"time"

	natsgo "github.com/nats-io/nats.go"
)

// connect starts connecting to url in the background and returns the
// connection, for the sink and the stream source alike: a server that is
// down at start, or goes down later, is retried every reconnectWait for
// ever, and nothing is buffered meanwhile, so a publish or request fails
// at once and is retried by its caller rather than flushed late. creds
// is a credentials file (empty: none); name names the connection on the
// server. Connections and losses are logged on logger.
func connect(url, creds, name string, reconnectWait time.Duration, logger *slog.Logger) (*natsgo.Conn, error) {
	opts := []natsgo.Option{
		natsgo.Name(name),
		natsgo.RetryOnFailedConnect(true), natsgo.MaxReconnects(-1), natsgo.ReconnectWait(reconnectWait),
		natsgo.ReconnectBufSize(-1),
		natsgo.ConnectHandler(func(c *natsgo.Conn) { logger.Info("nats connected", "server", c.ConnectedUrlRedacted()) }),
		natsgo.ReconnectHandler(func(c *natsgo.Conn) { logger.Info("nats reconnected", "server", c.ConnectedUrlRedacted()) }),
		natsgo.DisconnectErrHandler(func(_ *natsgo.Conn, err error) { logger.Warn("nats disconnected", "err", err) }),
	}
	if creds != "" {
		opts = append(opts, natsgo.UserCredentials(creds))
	}
	conn, err := natsgo.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS: %w", err)
	}
	return conn, nil
}

// notConnected is err, said to come from a connection that is down when
// conn is: nats.go then fails every request at once with only "outbound
// buffer limit exceeded" (connect buffers nothing while disconnected),
// which tells an operator with a wrong URL or a NATS server down nothing
// of either. The status names no server, so no credentials of a URL.
func notConnected(conn *natsgo.Conn, err error) error {
	if err == nil || conn.IsConnected() {
		return err
	}
	return fmt.Errorf("not connected to NATS (%s): %w", conn.Status(), err)
}
