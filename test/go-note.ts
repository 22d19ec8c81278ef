import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * The Go team's golang.org/x/mod/sumdb/note as a second opinion on cosigned notes: test/vectors/
 * cosignature/cosig.go `check` opens each note with note.Open and a verifier of the witness's key that
 * checks the cosignature/v1 message. It needs Go and the package as Debian installs them
 * (golang-golang-x-mod-dev); `GO_NOTE_MISSING` says why a test is skipped without them.
 */
const GOPATH = '/usr/share/gocode';
const PROGRAM = path.join(import.meta.dirname, 'vectors', 'cosignature', 'cosig.go');

export const GO_NOTE_MISSING: string | false =
  spawnSync('go', ['version']).status === 0 &&
  existsSync(path.join(GOPATH, 'src/golang.org/x/mod/sumdb/note/note.go'))
    ? false
    : 'Go or golang-golang-x-mod-dev is not installed';

export interface GoNoteResult {
  ok: boolean;
  error?: string;
  text?: string;
}

/** note.Open's verdict on each note, with a verifier of the cosigner key `vkey`. */
export function goOpenNotes(cases: { vkey: string; note: string }[]): GoNoteResult[] {
  const result = spawnSync('go', ['run', PROGRAM, 'check'], {
    input: JSON.stringify(cases),
    env: { ...process.env, GOPATH, GO111MODULE: 'off' },
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`go run cosig.go check failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as GoNoteResult[];
}
