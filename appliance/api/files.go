package api

import (
	"time"
)

// Dir is a directory in a box (GET /v1/boxes/NAME/dir?path=).
type Dir struct {
	Path    string     `json:"path"`
	Entries []DirEntry `json:"entries"`
	// Truncated says the directory has more entries than were listed.
	Truncated bool `json:"truncated,omitempty"`
}

// DirEntry is one entry of a Dir.
type DirEntry struct {
	Name string `json:"name"`
	// Type is "dir", "file", "link" or "other".
	Type     string    `json:"type"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
	// Target is a link's target.
	Target string `json:"target,omitempty"`
}

// WatchEvent is an event of a file watch (GET /v1/boxes/NAME/watch).
type WatchEvent struct {
	// Type is created, modified, removed or renamed; or ready (the
	// watches are set), dropped (Count events did not fit in the server's
	// queue: the client read too slowly), overflow (the kernel's own
	// queue overflowed in the box: events were lost) or error.
	Type string `json:"type"`
	Path string `json:"path,omitempty"`
	// From is a renamed path's old name.
	From string `json:"from,omitempty"`
	// Kind is file, dir, link or other, and Size its size in bytes, when
	// it was still there to look at.
	Kind    string    `json:"kind,omitempty"`
	Size    *int64    `json:"size,omitempty"`
	Count   int64     `json:"count,omitempty"`
	Watches int       `json:"watches,omitempty"`
	Time    time.Time `json:"time,omitzero"`
	Message string    `json:"message,omitempty"`
	// Errno is the system's word for an error (EACCES, ENOENT...).
	Errno string `json:"errno,omitempty"`
}
