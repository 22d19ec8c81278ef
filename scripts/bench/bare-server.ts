import Fastify from 'fastify';

/**
 * The baseline of the benchmark: the same framework parsing the same JSON body, answering a constant.
 * Whatever the service does beyond this is the cost of its work.
 */
const app = Fastify({ logger: false, bodyLimit: 128 * 1024 });
const answer = { ok: true };
app.post('/api/proof/notarize', async (request) => {
  if (typeof request.body !== 'object' || request.body === null) throw new Error('no body');
  return answer;
});
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 0) });
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
