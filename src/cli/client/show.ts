import { hashFile, type HashproofClient, type Proof } from '../../client/client.ts';
import { isProofId } from '../../core/ids.ts';
import { escapeControl, EXIT, print, printJson, printSafe, UsageError } from '../output.ts';

/**
 * The proof a `show` argument names: a proof id, or an http(s) URL whose path ends in one, as the
 * service's links do (its page `/proof/<id>`, its badge `/proof/<id>/badge.svg`, its document
 * `/api/proofs/<id>`). Anything else, a longer or shorter id included, is a usage error that says which
 * forms are taken.
 */
export function proofIdOf(ref: string | undefined): string {
  if (ref !== undefined && isProofId(ref)) return ref;
  const url = ref !== undefined && /^https?:\/\//i.test(ref) ? URL.parse(ref) : null;
  const parts = url?.pathname.split('/') ?? [];
  if (parts.at(-1) === '') parts.pop();
  if (parts.at(-1) === 'badge.svg') parts.pop();
  const id = parts.at(-1);
  if (id !== undefined && isProofId(id)) return id;
  throw new UsageError(
    `show takes a proof id (proof_ and 26 capital letters and digits, as in proof_01JZ8Q3W6X2Y4Z5A6B7C8D9E0F) ` +
      `or a proof's page, badge or API URL ending in one` +
      (ref === undefined ? '' : `; got ${JSON.stringify(ref)}`),
  );
}

/** `hashproof show <proof-id | proof-url>`: one proof, as the service holds it. */
export async function show(
  client: HashproofClient,
  [ref, ...extra]: string[],
  values: { json?: boolean },
): Promise<number> {
  if (extra.length > 0) throw new UsageError(`show takes one proof, got ${extra.length + 1}`);
  const { proof } = await client.getProof(proofIdOf(ref));
  if (values.json) printJson(proof);
  else print(describe(proof));
  return EXIT.ok;
}

/** `hashproof search`: one page of the proofs that match, newest first. */
export async function search(
  client: HashproofClient,
  values: {
    json?: boolean;
    q?: string;
    'content-hash'?: string;
    file?: string;
    account?: string;
    limit?: string;
  },
): Promise<number> {
  const contentHash = values.file ? await hashFile(values.file) : values['content-hash'];
  const page = await client.search({
    q: values.q,
    contentHash,
    accountId: values.account,
    limit: values.limit === undefined ? undefined : Number(values.limit),
  });
  if (values.json) printJson(page);
  else
    for (const proof of page.proofs)
      printSafe(`${proof.id}  ${proof.timestamp}  ${proof.contentHash}  ${proof.label}`);
  return EXIT.ok;
}

/** A proof as `show` prints it: each field from the service with its control characters escaped. */
function describe(proof: Proof): string {
  const keys = Array.isArray(proof.metadataKeys) ? proof.metadataKeys.join(', ') : '';
  return [
    ['id         ', proof.id],
    ['timestamp  ', proof.timestamp],
    ['label      ', proof.label],
    ['contentHash', proof.contentHash],
    ['metadata   ', `${proof.metadataHash} (keys: ${keys || 'none'})`],
    ['verified   ', proof.verified],
    ['signature  ', `${proof.signature} (key ${proof.keyId})`],
  ]
    .map(([name, value]) => `${name} ${escapeControl(String(value))}`)
    .join('\n');
}
