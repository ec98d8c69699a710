//go:build !unix

package archive

// openFlags open a file to be packed (see the unix build's).
const openFlags = 0
