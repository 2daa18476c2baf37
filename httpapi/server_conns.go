package httpapi

import (
	"context"
	"net"
	"sync"
)

// capListener accepts at most cap(slots) connections at once: Accept waits
// for a served connection to close. It is netutil.LimitListener, but with
// connections that let the server reach the TCP connection underneath
// (connOf), which an event stream needs to bound its send buffer.
type capListener struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{} // closed by Close: a waiting Accept returns
	closeOnce sync.Once
}

func newCapListener(ln net.Listener, n int) *capListener {
	return &capListener{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *capListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &cappedConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *capListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// cappedConn gives its slot back when it closes (once).
type cappedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

type connKey struct{}

// withConn is the servers' ConnContext: each request's context carries
// its connection, as accepted from the listener (connOf unwraps it).
func withConn(ctx context.Context, c net.Conn) context.Context {
	if cc, ok := c.(*cappedConn); ok {
		c = cc.Conn
	}
	return context.WithValue(ctx, connKey{}, c)
}

// connOf returns the connection a request arrived on, nil for a server not
// built by NewServer (httptest, echo.Start).
func connOf(ctx context.Context) net.Conn {
	c, _ := ctx.Value(connKey{}).(net.Conn)
	return c
}
