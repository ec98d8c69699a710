package api

import (
	"time"
)

// Snapshot is a filesystem snapshot of a box.
type Snapshot struct {
	ID      string    `json:"id"`
	Box     string    `json:"box"`
	Reason  string    `json:"reason"`
	State   string    `json:"state"` // pending, ready, failed, deleting
	Error   string    `json:"error,omitempty"`
	Created time.Time `json:"created"`
	// Size is the bytes the snapshot adds to what its box was made from
	// (absent: not known).
	Size int64 `json:"size,omitempty"`
	// Shipped says where it stands with the server's object store, when
	// one is configured: "local" (on its server only), "shipping",
	// "shipped" (in the store: it outlives its server). ShipError is why
	// the last shipping failed (it is tried again).
	Shipped   string `json:"shipped,omitempty"`
	ShipError string `json:"ship_error,omitempty"`
}
