package main

import "testing"

// The demo banner's curl and agent URLs: never "localhost127.0.0.1:…".
func TestLocalURL(t *testing.T) {
	for _, c := range []struct{ scheme, addr, want string }{
		{"http", "127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"http", ":8080", "http://localhost:8080"},
		{"http", "[::1]:8080", "http://[::1]:8080"},
		{"http", "localhost:8080", "http://localhost:8080"},
		{"http", "0.0.0.0:8080", "http://localhost:8080"},
		{"http", "[::]:8080", "http://localhost:8080"},
		{"ws", "127.0.0.1:9090", "ws://127.0.0.1:9090"},
		{"ws", ":9090", "ws://localhost:9090"},
	} {
		if got := localURL(c.scheme, c.addr); got != c.want {
			t.Errorf("localURL(%q, %q) = %q, want %q", c.scheme, c.addr, got, c.want)
		}
	}
}
