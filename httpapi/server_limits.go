package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// Defaults of ServerConfig. Every listener of the process (the API, the
// gateway, the internal metrics listener) is built by NewServer, so none is
// left with net/http's zero values (no timeouts, 1 MB of headers).
const (
	// DefaultReadHeaderTimeout bounds reading a request's headers.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds reading a whole request, body included:
	// API bodies are small JSON documents, so a body still trickling in
	// after this is abuse (it used to hold a connection for minutes).
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds a handler and its response, from the end
	// of the request headers. Event streams replace it with a deadline per
	// write; a hijacked connection (a gateway WebSocket session) leaves
	// both deadlines behind (net/http clears them on Hijack) and bounds its
	// reads and writes with contexts.
	DefaultWriteTimeout = 60 * time.Second
	// DefaultIdleTimeout closes keep-alive connections idle this long.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxHeaderBytes caps request headers (net/http adds 4 KiB of
	// slack); larger is 431 Request Header Fields Too Large.
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultMaxConns caps the connections one listener serves at once;
	// past it, new connections wait in the kernel's accept queue.
	DefaultMaxConns = 10_000
	// internalMaxConns caps the internal listener: scrapers and probes.
	internalMaxConns = 64
)

// ServerConfig is the limits and access policy of one HTTP listener. Zero
// values take the defaults above.
type ServerConfig struct {
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	// MaxConns caps connections served at once (newCapListener).
	MaxConns int
	// MetricsToken, when set, is a bearer token that may read /metrics on
	// this listener (besides operator tokens), for scrapers.
	MetricsToken string
	// InternalAddr, when set, is a second listener for scrapers and
	// probes: /metrics and /readyz with every detail, and /healthz, all
	// without a token. Bind it to a private address.
	InternalAddr string
}

func (c ServerConfig) withDefaults() ServerConfig {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&c.ReadTimeout, DefaultReadTimeout)
	def(&c.WriteTimeout, DefaultWriteTimeout)
	def(&c.IdleTimeout, DefaultIdleTimeout)
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns
	}
	return c
}

// Server is an http.Server with the limits of a ServerConfig: timeouts, a
// header cap, a connection cap applied by Serve and ListenAndServe, and an
// optional internal listener that ListenAndServe starts and Shutdown and
// Close stop with the main one.
type Server struct {
	*http.Server
	maxConns int
	internal *http.Server // nil without ServerConfig.InternalAddr
}

// NewServer returns the server for handler h on addr. Requests carry the
// listener's access policy (the metrics token; whether it is the internal
// listener) in their context, where /metrics and /readyz read it.
func NewServer(addr string, h http.Handler, c ServerConfig) *Server {
	c = c.withDefaults()
	build := func(addr string, h http.Handler, acc serverAccess) *http.Server {
		return &http.Server{
			Addr: addr, Handler: h,
			ReadHeaderTimeout: c.ReadHeaderTimeout, ReadTimeout: c.ReadTimeout,
			WriteTimeout: c.WriteTimeout, IdleTimeout: c.IdleTimeout,
			MaxHeaderBytes: c.MaxHeaderBytes,
			BaseContext: func(net.Listener) context.Context {
				return context.WithValue(context.Background(), serverAccessKey{}, acc)
			},
			ConnContext: withConn,
		}
	}
	s := &Server{Server: build(addr, h, serverAccess{metricsToken: c.MetricsToken}), maxConns: c.MaxConns}
	if c.InternalAddr != "" {
		s.internal = build(c.InternalAddr, InternalHandler(h), serverAccess{internal: true})
	}
	return s
}

// Listeners are a Server's sockets, bound by Listen before the server is
// built: a process whose port is taken then stops before it has done
// anything (a demo seeded, tokens printed, daemons started).
type Listeners struct {
	api, internal net.Listener
}

// Listen binds addr, and internalAddr when it is set.
func Listen(addr, internalAddr string) (Listeners, error) {
	if addr == "" {
		addr = ":http"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return Listeners{}, err
	}
	l := Listeners{api: ln}
	if internalAddr != "" {
		if l.internal, err = net.Listen("tcp", internalAddr); err != nil {
			_ = ln.Close()
			return Listeners{}, err
		}
	}
	return l, nil
}

// Close closes the sockets of listeners that were never served.
func (l Listeners) Close() {
	for _, ln := range []net.Listener{l.api, l.internal} {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// ListenAndServe listens on Addr (and InternalAddr, if set) and serves
// until Shutdown or Close; it returns the first listener's error, which is
// http.ErrServerClosed after Shutdown or Close.
func (s *Server) ListenAndServe() error {
	internal := ""
	if s.internal != nil {
		internal = s.internal.Addr
	}
	l, err := Listen(s.Addr, internal)
	if err != nil {
		return err
	}
	return s.ServeListeners(l)
}

// ServeListeners serves l (bound by Listen with this server's addresses)
// until Shutdown or Close, like ListenAndServe.
func (s *Server) ServeListeners(l Listeners) error {
	if s.internal == nil || l.internal == nil {
		return s.Serve(l.api)
	}
	errc := make(chan error, 2)
	go func() { errc <- s.internal.Serve(netutil.LimitListener(l.internal, internalMaxConns)) }()
	go func() { errc <- s.Serve(l.api) }()
	return <-errc
}

// Serve serves ln with the connection cap.
func (s *Server) Serve(ln net.Listener) error {
	return s.Server.Serve(newCapListener(ln, s.maxConns))
}

// Shutdown shuts both listeners down gracefully (http.Server.Shutdown).
func (s *Server) Shutdown(ctx context.Context) error {
	var ierr error
	if s.internal != nil {
		ierr = s.internal.Shutdown(ctx)
	}
	return errors.Join(s.Server.Shutdown(ctx), ierr)
}

// Close closes both listeners and their connections at once.
func (s *Server) Close() error {
	var ierr error
	if s.internal != nil {
		ierr = s.internal.Close()
	}
	return errors.Join(s.Server.Close(), ierr)
}

// serverAccess is a listener's access policy, carried in each request's
// context from http.Server.BaseContext.
type serverAccess struct {
	metricsToken string
	internal     bool // the internal listener: no token needed for ops routes
}

type serverAccessKey struct{}

// accessOf returns the policy of the listener that received the request;
// a request from a server not built by NewServer (httptest, echo.Start)
// gets the zero policy: operator tokens only, no internal access.
func accessOf(ctx context.Context) serverAccess {
	acc, _ := ctx.Value(serverAccessKey{}).(serverAccess)
	return acc
}

// internalRoutes are what the internal listener serves.
var internalRoutes = map[string]bool{"/metrics": true, "/readyz": true, "/healthz": true}

// InternalHandler serves the operations routes of h (GET and HEAD of
// /metrics, /readyz and /healthz) as seen from the internal listener:
// without a token, /readyz with its details. Anything else is 404.
// NewServer uses it for ServerConfig.InternalAddr.
func InternalHandler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !internalRoutes[r.URL.Path] || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"code":"NOT_FOUND","message":"route not found"}}` + "\n"))
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), serverAccessKey{}, serverAccess{internal: true})))
	})
}
