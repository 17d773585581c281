package kind

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// SetDigest is a plugin set's digest: the SHA-256, in hex, of the sorted
// lines "kind version sha256\n", one per kind (a kind built into the host
// has no sha256). Two hosts serve the same kinds with the same code
// exactly when their digests are equal: GET /api/v1/cluster shows it, and
// a cluster node publishes it so a node with another set holds nothing.
func SetDigest(infos []Info) string {
	lines := make([]string, 0, len(infos))
	for _, i := range infos {
		lines = append(lines, i.Kind+" "+i.Version+" "+i.SHA256+"\n")
	}
	slices.Sort(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l))
	}
	return hex.EncodeToString(h.Sum(nil))
}
