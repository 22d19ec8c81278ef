// Command gen writes vector.json: known answers for hashproof's aggregation tree (docs/cli.md),
// computed by the Go team's golang.org/x/mod/sumdb/tlog, an RFC 6962 implementation independent of
// ours. Leaf i's file digest is SHA-256("hashproof aggregation leaf <i>"); the tree's record i is that
// 32-byte digest, so tlog.RecordHash gives SHA-256(0x00 || digest), as aggregation does.
//
// Run once: GOPATH=/usr/share/gocode GO111MODULE=off go run gen.go > vector.json
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"

	"golang.org/x/mod/sumdb/tlog"
)

type pathCase struct {
	Index int64    `json:"index"`
	Path  []string `json:"path"`
}

type treeCase struct {
	Size    int64      `json:"size"`
	Digests []string   `json:"digests"`
	Root    string     `json:"root"`
	Paths   []pathCase `json:"paths"`
}

func main() {
	var cases []treeCase
	for _, size := range []int64{1, 2, 3, 5, 7, 8, 100} {
		var stored []tlog.Hash
		reader := tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
			out := make([]tlog.Hash, len(indexes))
			for i, x := range indexes {
				out[i] = stored[x]
			}
			return out, nil
		})
		c := treeCase{Size: size}
		for i := int64(0); i < size; i++ {
			digest := sha256.Sum256([]byte(fmt.Sprintf("hashproof aggregation leaf %d", i)))
			c.Digests = append(c.Digests, hex.EncodeToString(digest[:]))
			hashes, err := tlog.StoredHashes(i, digest[:], reader)
			if err != nil {
				panic(err)
			}
			stored = append(stored, hashes...)
		}
		root, err := tlog.TreeHash(size, reader)
		if err != nil {
			panic(err)
		}
		c.Root = hex.EncodeToString(root[:])
		for _, index := range []int64{0, 1, 2, size / 2, size - 2, size - 1} {
			if index < 0 || index >= size || (len(c.Paths) > 0 && contains(c.Paths, index)) {
				continue
			}
			proof, err := tlog.ProveRecord(size, index, reader)
			if err != nil {
				panic(err)
			}
			p := pathCase{Index: index, Path: []string{}}
			for _, h := range proof {
				p.Path = append(p.Path, hex.EncodeToString(h[:]))
			}
			c.Paths = append(c.Paths, p)
		}
		cases = append(cases, c)
	}
	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", "  ")
	if err := out.Encode(map[string]interface{}{
		"description": "RFC 6962 trees over file digests: leaf = SHA-256(0x00 || digest), node = SHA-256(0x01 || left || right); roots and paths from golang.org/x/mod/sumdb/tlog",
		"trees":       cases,
	}); err != nil {
		panic(err)
	}
}

func contains(paths []pathCase, index int64) bool {
	for _, p := range paths {
		if p.Index == index {
			return true
		}
	}
	return false
}
