package api

// Grant is a user a box is shared with (GET /v1/boxes/NAME/grants).
type Grant struct {
	User string `json:"user"`
	// Access is "viewer" (reads the box: its state, jobs and their logs,
	// files, screenshots, metrics) or "member" (works in it as its owner
	// does, but cannot remove, move or share it, or change its policy).
	Access string `json:"access"`
}

// GrantPut shares a box with a user (PUT /v1/boxes/NAME/grants/USER).
type GrantPut struct {
	// Access is "viewer" (the default) or "member".
	Access string `json:"access,omitempty"`
}
