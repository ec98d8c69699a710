package api

// QuotaLimits bound what a member may have at once; 0, and an empty
// Types, are no bound.
type QuotaLimits struct {
	Boxes    int      `json:"boxes"`
	Running  int      `json:"running"` // boxes meant to run
	Drives   int      `json:"drives"`
	DriveGiB float64  `json:"drive_gib"` // what their drives hold together
	Jobs     int      `json:"jobs"`      // running jobs and prompts
	Types    []string `json:"types"`     // the box types they may make
}

// QuotaUse is what a user has now, against their quota.
type QuotaUse struct {
	Boxes   int `json:"boxes"`
	Running int `json:"running"`
	Drives  int `json:"drives"`
	Jobs    int `json:"jobs"`
}

// UserQuota is one user's quota: what holds (the server's defaults, but
// the fields in Own, which were set for this user), and their use.
// Owners have no bounds.
type UserQuota struct {
	User   string      `json:"user"`
	Role   string      `json:"role"`
	Limits QuotaLimits `json:"limits"`
	Own    []string    `json:"own"`
	// Groups names, for each field a group's quota gives (and none set
	// for the user), the group.
	Groups map[string]string `json:"groups,omitempty"`
	Use    QuotaUse          `json:"use"`
}

// Group is a group of users (GET /v1/groups): set by the owner or an
// admin, or by a sign-in provider (its groups claim, at each sign-in).
type Group struct {
	Name    string        `json:"name"`
	Members []GroupMember `json:"members"`
	// Quota is what the group's quota sets (nil fields: nothing), for
	// its members who are not given the field themselves.
	Quota QuotaPut `json:"quota"`
}

// GroupMember is a user in a group, and what put them there: "owner" (by
// hand) or "sso:ID" (a sign-in provider).
type GroupMember struct {
	User   string `json:"user"`
	Source string `json:"source"`
}

// QuotaFields are the fields of a quota, as QuotaPut and Own name them.
var QuotaFields = []string{"boxes", "running", "drives", "drive_gib", "jobs", "types"}

// QuotaPut changes a user's quota (the owner's): each field given is set
// for them (0: no bound); those named in Default go back to the server's
// default.
type QuotaPut struct {
	Boxes    *int      `json:"boxes,omitempty"`
	Running  *int      `json:"running,omitempty"`
	Drives   *int      `json:"drives,omitempty"`
	DriveGiB *float64  `json:"drive_gib,omitempty"`
	Jobs     *int      `json:"jobs,omitempty"`
	Types    *[]string `json:"types,omitempty"`
	Default  []string  `json:"default,omitempty"`
}
