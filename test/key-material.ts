import { createPrivateKey } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Every string inside a file: the values of a JSON document, or the text itself. */
function stringsOf(text: string, value: unknown): string[] {
  if (value === undefined) return [text];
  const found: string[] = [];
  const walk = (node: unknown): void => {
    if (typeof node === 'string') found.push(node);
    else if (node !== null && typeof node === 'object') Object.values(node).forEach(walk);
  };
  walk(value);
  return found;
}

/** Raw secret bytes as they could leak: hex, base64 and base64url. */
function encodings(bytes: Buffer): string[] {
  return [bytes.toString('hex'), bytes.toString('base64').replace(/=+$/, ''), bytes.toString('base64url')];
}

/**
 * Every form in which the private keys of a signing-keys directory could appear in a response or a log:
 * each PEM private key's body (whole and line by line), its DER bytes and its raw private scalar (hex,
 * base64, base64url), and each HMAC secret's bytes. `keys` counts the secrets found, so a check
 * that found none fails instead of passing.
 */
export function signingKeyMaterial(dir: string): { keys: number; forms: string[] } {
  let keys = 0;
  const forms = new Set<string>();
  for (const file of readdirSync(dir)) {
    const text = readFileSync(path.join(dir, file), 'utf8');
    const json = parseJson(text) as { algorithm?: string; secret?: string } | undefined;
    for (const value of stringsOf(text, json)) {
      for (const match of value.matchAll(/-----BEGIN PRIVATE KEY-----([\s\S]*?)-----END PRIVATE KEY-----/g)) {
        keys += 1;
        const lines = (match[1] ?? '').split(/\s+/).filter(Boolean);
        forms.add(lines.join(''));
        for (const line of lines) if (line.length >= 32) forms.add(line);
        const key = createPrivateKey(match[0]);
        for (const form of encodings(key.export({ format: 'der', type: 'pkcs8' }))) forms.add(form);
        const d = key.export({ format: 'jwk' }).d;
        if (d !== undefined) for (const form of encodings(Buffer.from(d, 'base64url'))) forms.add(form);
      }
    }
    if (json?.algorithm === 'hmac-sha256' && typeof json.secret === 'string') {
      keys += 1;
      forms.add(json.secret);
      for (const form of encodings(Buffer.from(json.secret, 'base64'))) forms.add(form);
    }
  }
  return { keys, forms: [...forms] };
}
