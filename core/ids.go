package core

import "github.com/google/uuid"

// NewID returns a new identifier for a row or an event: a version 7 UUID,
// whose first 48 bits are the time in milliseconds and the other 74 random.
// Time-ordered ids append to the right edge of their primary-key index
// (reservations, allocations, node jobs, events), where version 4 ids land
// on a random leaf page each: once a table outgrows the buffer cache, every
// insert would read one page and, after each checkpoint, write it whole to
// the WAL. The random bits keep ids unguessable; ordering between ids
// means nothing beyond "created about then" (clocks of several processes
// differ).
func NewID() uuid.UUID { return uuid.Must(uuid.NewV7()) }
