package agent

import (
	"net"
	"sync/atomic"
	"testing"
)

// listener is a TCP server on the node's 127.0.0.1 that counts the
// connections it accepted.
type listener struct {
	port int
	n    atomic.Int64
}

func (l *listener) accepted() int64 { return l.n.Load() }

func netListen(t *testing.T) (*listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { ln.Close() })
	l := &listener{port: ln.Addr().(*net.TCPAddr).Port}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.n.Add(1)
			c.Close()
		}
	}()
	return l, nil
}
