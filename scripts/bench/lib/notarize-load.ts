/**
 * `connections` clients creating proofs as fast as the service answers, for `seconds`; every
 * `sample`-th proof created is handed to `onSampled` with the moment its answer arrived
 * (`performance.now()` and `Date.now()`). Returns how many were created and how many failed.
 */
export async function notarizeLoad(
  base: string,
  options: {
    seconds: number;
    connections: number;
    sample: number;
    label: string;
    onSampled: (id: string, answeredAt: { monotonic: number; wall: number }) => void;
  },
): Promise<{ created: number; errors: number }> {
  let created = 0;
  let errors = 0;
  const until = performance.now() + options.seconds * 1000;
  const worker = async (w: number) => {
    for (let i = 0; performance.now() < until; i++) {
      const res = await fetch(`${base}/api/proof/notarize`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          contentHash: 'sha256:' + (w * 1_000_000 + i).toString(16).padStart(64, '0'),
          label: `${options.label} ${w}/${i}`,
          idempotencyKey: `${options.label}-${w}-${i}`,
        }),
      });
      const answeredAt = { monotonic: performance.now(), wall: Date.now() };
      const body = (await res.json()) as { proof?: { id: string } };
      if (res.status !== 200 || body.proof === undefined) {
        errors++;
        continue;
      }
      created++;
      if (created % options.sample === 0) options.onSampled(body.proof.id, answeredAt);
    }
  };
  await Promise.all(Array.from({ length: options.connections }, (_, w) => worker(w)));
  return { created, errors };
}
