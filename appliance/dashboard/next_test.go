package dashboard

import "testing"

// Only same-origin absolute paths survive as a place to go after login;
// everything a browser would follow off the site goes home.
func TestSafeNext(t *testing.T) {
	for next, want := range map[string]string{
		"/":                      "/",
		"/boxes/web":             "/boxes/web",
		"/device?code=AB":        "/device?code=AB",
		"/a/../b":                "/b",
		"//evil.example":         "/",
		"/\\evil.example":        "/",
		"/./%5Cevil.example":     "/",
		"/%09/evil.example":      "/",
		"/%0a/evil.example":      "/",
		"/.//evil.example":       "/evil.example",
		"https://evil.example/":  "/",
		"javascript:alert(1)":    "/",
		"evil.example":           "/",
		"/%2F/evil.example":      "/evil.example",
		"///evil.example":        "/evil.example",
		"/x?next=//evil.example": "/x?next=//evil.example",
	} {
		if got := safeNext(next); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", next, got, want)
		}
	}
}
