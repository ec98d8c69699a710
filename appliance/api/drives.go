package api

import (
	"time"
)

// Drive is a named volume that outlives the boxes that mount it.
type Drive struct {
	Name    string    `json:"name"`
	State   string    `json:"state"` // ready, pending, deleting
	UsedBy  []string  `json:"used_by,omitempty"`
	Created time.Time `json:"created"`
	// Project is the Boxfile project that declares the drive, if any.
	Project string `json:"project,omitempty"`
	// Size and Labels are what the Boxfile declares. Size is recorded and
	// shown, not enforced: Docker's local volumes have no quota.
	Size   string            `json:"size,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	// Node is the server the drive's data is on, once the server has
	// more than one (its boxes are on it too).
	Node string `json:"node,omitempty"`
}

// DrivePost creates a drive.
type DrivePost struct {
	Name string `json:"name"`
}
