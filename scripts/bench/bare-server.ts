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

/**
 * A copy of one of the service's answers, its body and headers as the service sent them (set once with
 * PUT): the same framework sending the same bytes with no work at all, the ceiling of a read route.
 */
let copied: { body: string; headers: Record<string, string> } = { body: '{}', headers: {} };
app.put('/copy', async (request) => {
  copied = request.body as typeof copied;
  return answer;
});
app.get('/copy', async (_request, reply) => reply.headers(copied.headers).send(copied.body));
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 0) });
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
