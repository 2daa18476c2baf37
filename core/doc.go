// Package core holds the domain vocabulary of the control plane: error codes,
// actors and roles, event types and the state tables that say which
// transitions are legal. It knows nothing of SQL or HTTP, so every other
// package can depend on it and the rules live in one place.
package core
