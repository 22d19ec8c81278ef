// Command cosig checks tlog-cosignature v1 (https://c2sp.org/tlog-cosignature) notes with the Go team's
// golang.org/x/mod/sumdb/note, an implementation of signed notes independent of hashproof's.
//
//	cosig gen    writes vector.json: checkpoints cosigned here, by a key derived from a fixed seed.
//	cosig check  reads [{"vkey","note"}] on standard input and answers, for each, whether note.Open
//	             accepts the note with a verifier of that key that checks the cosignature/v1 message.
//
// Run with Debian's Go and golang-golang-x-mod-dev:
//
//	GOPATH=/usr/share/gocode GO111MODULE=off go run cosig.go gen > vector.json
package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

const algCosignatureV1 = 0x04

func keyHash(name string, pub []byte) uint32 {
	h := sha256.New()
	h.Write([]byte(name))
	h.Write([]byte("\n"))
	h.Write([]byte{algCosignatureV1})
	h.Write(pub)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

func message(msg []byte, timestamp uint64) []byte {
	var b bytes.Buffer
	b.WriteString("cosignature/v1\ntime " + strconv.FormatUint(timestamp, 10) + "\n")
	b.Write(msg)
	return b.Bytes()
}

type verifier struct {
	name string
	hash uint32
	pub  ed25519.PublicKey
}

func (v verifier) Name() string    { return v.name }
func (v verifier) KeyHash() uint32 { return v.hash }
func (v verifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	t := binary.BigEndian.Uint64(sig[:8])
	return t < 1<<63 && ed25519.Verify(v.pub, message(msg, t), sig[8:])
}

func parseVkey(vkey string) (verifier, error) {
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) != 3 {
		return verifier{}, errors.New("malformed vkey")
	}
	id, err := hex.DecodeString(parts[1])
	key, err2 := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || err2 != nil || len(id) != 4 || len(key) != 33 || key[0] != algCosignatureV1 {
		return verifier{}, errors.New("malformed vkey")
	}
	v := verifier{parts[0], keyHash(parts[0], key[1:]), ed25519.PublicKey(key[1:])}
	if v.hash != binary.BigEndian.Uint32(id) {
		return verifier{}, errors.New("vkey id does not match")
	}
	return v, nil
}

type signer struct {
	verifier
	priv      ed25519.PrivateKey
	timestamp uint64
}

func (s signer) Sign(msg []byte) ([]byte, error) {
	sig := make([]byte, 8, 8+ed25519.SignatureSize)
	binary.BigEndian.PutUint64(sig, s.timestamp)
	return append(sig, ed25519.Sign(s.priv, message(msg, s.timestamp))...), nil
}

type vectorCase struct {
	Vkey       string `json:"vkey"`
	Checkpoint string `json:"checkpoint"`
	Timestamp  uint64 `json:"timestamp"`
	Line       string `json:"line"`
}

func gen() {
	seed := sha256.Sum256([]byte("hashproof cosignature vector key"))
	priv := ed25519.NewKeyFromSeed(seed[:])
	pub := priv.Public().(ed25519.PublicKey)
	name := "witness.example/go"
	v := verifier{name, keyHash(name, pub), pub}
	vkey := fmt.Sprintf("%s+%08x+%s", name, v.hash, base64.StdEncoding.EncodeToString(append([]byte{algCosignatureV1}, pub...)))
	checkpoints := []string{
		"example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",
		"hashproof.example/log\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n",
		"hashproof.example/log\n7\n/6WVhPs2CwSsb5rYBH5cjHV/wSmA79abXAwhXw3Kj/0=\nan extension line\n",
	}
	var cases []vectorCase
	for i, cp := range checkpoints {
		ts := []uint64{1679315147, 1, 1795000000}[i]
		signed, err := note.Sign(&note.Note{Text: cp}, signer{v, priv, ts})
		if err != nil {
			panic(err)
		}
		sigs := string(signed[len(cp)+1:])
		cases = append(cases, vectorCase{vkey, cp, ts, strings.TrimSuffix(sigs, "\n")})
	}
	out, _ := json.MarshalIndent(cases, "", "  ")
	fmt.Println(string(out))
}

type checkCase struct {
	Vkey string `json:"vkey"`
	Note string `json:"note"`
}

type checkResult struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	Text  string `json:"text,omitempty"`
}

func check() {
	var cases []checkCase
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		panic(err)
	}
	results := []checkResult{}
	for _, c := range cases {
		v, err := parseVkey(c.Vkey)
		if err != nil {
			results = append(results, checkResult{Error: err.Error()})
			continue
		}
		n, err := note.Open([]byte(c.Note), note.VerifierList(v))
		if err != nil {
			results = append(results, checkResult{Error: err.Error()})
			continue
		}
		results = append(results, checkResult{OK: len(n.Sigs) == 1, Text: n.Text})
	}
	out, _ := json.Marshal(results)
	fmt.Println(string(out))
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "gen" {
		gen()
	} else if len(os.Args) == 2 && os.Args[1] == "check" {
		check()
	} else {
		fmt.Fprintln(os.Stderr, "usage: cosig gen|check")
		os.Exit(2)
	}
}
