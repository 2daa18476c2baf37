package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/testenv"
)

// The bound steps down one at a time while the backlog is over target, to
// one at least, back up while it is under half the target, to the pool's
// size at most, and stays in between.
func TestCommandAdmissionSteps(t *testing.T) {
	t.Parallel()
	a := NewCommandAdmission(3)
	target := 70 * time.Millisecond
	for _, want := range []int{2, 1, 1} {
		require.Equal(t, want, a.Step(100*time.Millisecond, target))
	}
	require.Equal(t, 1, a.Step(50*time.Millisecond, target), "between half the target and the target: unchanged")
	for _, want := range []int{2, 3, 3} {
		require.Equal(t, want, a.Step(0, target))
	}
	require.Equal(t, 1, NewCommandAdmission(0).Limit(), "at least one command is admitted")
}

// admissionServer serves POST /cmd and GET /read through a's middleware
// with the API's error envelope; the request named n reports on entered
// that it started, then answers when hold[n] is closed.
type admissionServer struct {
	e       *echo.Echo
	entered chan string
	hold    map[string]chan struct{}
}

func newAdmissionServer(a *CommandAdmission, names ...string) *admissionServer {
	s := &admissionServer{e: echo.New(), entered: make(chan string, 16), hold: map[string]chan struct{}{}}
	for _, n := range names {
		s.hold[n] = make(chan struct{})
	}
	s.e.HTTPErrorHandler = errorHandler(slog.New(slog.DiscardHandler))
	h := func(c echo.Context) error {
		name := c.Request().Header.Get("X-Name")
		s.entered <- name
		<-s.hold[name]
		return c.NoContent(http.StatusNoContent)
	}
	s.e.POST("/cmd", h, a.middleware())
	s.e.GET("/read", h, a.middleware())
	return s
}

// do sends a request named name in its own goroutine; its recorder arrives
// on the returned channel when it is answered.
func (s *admissionServer) do(ctx context.Context, method, name string) <-chan *httptest.ResponseRecorder {
	done := make(chan *httptest.ResponseRecorder, 1)
	req := httptest.NewRequestWithContext(ctx, method, map[string]string{http.MethodGet: "/read"}[method]+
		map[string]string{http.MethodPost: "/cmd"}[method], nil)
	req.Header.Set("X-Name", name)
	go func() {
		rec := httptest.NewRecorder()
		s.e.ServeHTTP(rec, req)
		done <- rec
	}()
	return done
}

// Over the bound, commands wait, first come first served; reads pass; a
// command whose deadline passes while it waits gets 503 UNAVAILABLE with
// Retry-After and never runs; a bound lowered under running commands
// admits the next one only once they are below it.
func TestCommandsOverTheBoundWait(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		a := NewCommandAdmission(2)
		s := newAdmissionServer(a, "first", "second", "third", "fourth", "late", "read")
		ctx := t.Context()

		first, second := s.do(ctx, http.MethodPost, "first"), s.do(ctx, http.MethodPost, "second")
		synctest.Wait()
		require.ElementsMatch(t, []string{"first", "second"}, []string{<-s.entered, <-s.entered})
		require.Equal(t, 1, a.Step(time.Second, 70*time.Millisecond), "lowered under two running commands")

		third := s.do(ctx, http.MethodPost, "third")
		synctest.Wait()
		fourth := s.do(ctx, http.MethodPost, "fourth")
		deadline, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		late := s.do(deadline, http.MethodPost, "late")
		read := s.do(ctx, http.MethodGet, "read")
		synctest.Wait()
		require.Equal(t, "read", <-s.entered, "reads are not held back")
		require.Empty(t, s.entered, "no command over the bound runs")

		time.Sleep(10 * time.Second) // the fake clock of the bubble: the deadline passes
		synctest.Wait()
		rec := <-late
		require.Equal(t, http.StatusServiceUnavailable, rec.Code)
		require.Contains(t, rec.Body.String(), `"UNAVAILABLE"`)
		require.NotEmpty(t, rec.Header().Get("Retry-After"))

		close(s.hold["read"])
		close(s.hold["first"])
		synctest.Wait()
		require.Empty(t, s.entered, "one command still runs: the bound of one is full")
		close(s.hold["second"])
		synctest.Wait()
		require.Equal(t, "third", <-s.entered, "the oldest waiter goes first")
		close(s.hold["third"])
		synctest.Wait()
		require.Equal(t, "fourth", <-s.entered)
		close(s.hold["fourth"])
		for _, done := range []<-chan *httptest.ResponseRecorder{first, second, third, fourth, read} {
			require.Equal(t, http.StatusNoContent, (<-done).Code)
		}
		require.Equal(t, 0, a.InFlight())
	})
}

// Follow steps the bound on each tick with what read returns, and a read
// that fails opens the bound fully: an unknown backlog never holds the API.
func TestCommandAdmissionFollow(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		a := NewCommandAdmission(4)
		ticks := make(chan time.Time)
		readings := []error{nil, nil, nil, errors.New("database unreachable")}
		i := 0
		read := func(context.Context) (time.Duration, error) {
			err := readings[i]
			i++
			return time.Second, err
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { a.Follow(ctx, ticks, read, 70*time.Millisecond, slog.New(slog.DiscardHandler)); close(done) }()
		for _, want := range []int{3, 2, 1, 4} {
			ticks <- time.Now()
			synctest.Wait()
			require.Equal(t, want, a.Limit())
		}
		cancel()
		<-done
	})
}

// A database outage makes every read fail, ten a second: the log says so
// once when the reads start failing and once when they succeed again, not
// once per tick (an outage of a minute was 600 warnings per API process).
func TestCommandAdmissionLogsAFailingReadOncePerOutage(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		a := NewCommandAdmission(4)
		ticks := make(chan time.Time)
		down := errors.New("database unreachable")
		readings := []error{nil, down, down, down, down, nil, nil, down, nil}
		i := 0
		read := func(context.Context) (time.Duration, error) {
			err := readings[i]
			i++
			return 0, err
		}
		var out testenv.LogBuffer
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			a.Follow(ctx, ticks, read, 70*time.Millisecond, slog.New(slog.NewJSONHandler(&out, nil)))
			close(done)
		}()
		for range readings {
			ticks <- time.Now()
			synctest.Wait()
		}
		cancel()
		<-done
		const failed = "WARN command admission: reading the sinks' backlog"
		const recovered = "INFO command admission: reading the sinks' backlog: recovered"
		require.Equal(t, []string{failed, recovered, failed, recovered}, out.LevelsAndMessages(t),
			"one warning as each run of failed reads starts, one line as it ends")
	})
}
