//go:build !unix

package archive

import "io/fs"

// openFlags open a file to be packed (see the unix build's).
const openFlags = 0

// hardLinked: this build cannot tell a file's other names; each is packed
// as a file of its own.
func hardLinked(fs.FileInfo) (fileKey, bool) { return fileKey{}, false }
