package api

import (
	"time"
)

// Image is a user's own box image, built from a Dockerfile in a builder
// box. Boxes are made from it by Ref (or, by its builder, by NAME:TAG).
type Image struct {
	// Name is NAME:TAG; Ref is OWNER/NAME:TAG, the server's name for it.
	Name  string `json:"name"`
	Ref   string `json:"ref"`
	Owner string `json:"owner"`
	// ID is the engine's id of the image.
	ID   string `json:"id"`
	Size int64  `json:"size"`
	// Dockerfile is its path in the build context; ContextDigest is the
	// digest of the context as the build saw it (names, modes, contents).
	Dockerfile    string `json:"dockerfile"`
	ContextDigest string `json:"context_digest"`
	// Bases are the images it was built on.
	Bases   []string  `json:"bases"`
	Project string    `json:"project,omitempty"`
	Built   time.Time `json:"built"`
	// BuildSeconds is how long its build took.
	BuildSeconds float64 `json:"build_seconds"`
	// Cached: this build's inputs were the last build's, and its image
	// was kept (only in a build's answer).
	Cached bool `json:"cached,omitempty"`
	// SharedWith says who else may make boxes from it: "user:NAME",
	// "group:NAME" or "everyone".
	SharedWith []string `json:"shared_with"`
	// Mine: the caller's own (else shared with them, or seen as an admin).
	Mine bool `json:"mine"`
}

// ImageShares is who else may make boxes from an image (all its tags),
// replacing what was: named users, groups, or everyone.
type ImageShares struct {
	Users    []string `json:"users"`
	Groups   []string `json:"groups"`
	Everyone bool     `json:"everyone"`
}

// BuildEvent is one event of a build's stream: "log" (Text, a line of the
// build's output), "image" (the image made) or "error" (Message).
type BuildEvent struct {
	Type    string `json:"type"`
	Text    string `json:"text,omitempty"`
	Image   *Image `json:"image,omitempty"`
	Message string `json:"message,omitempty"`
	Code    string `json:"code,omitempty"`
}
