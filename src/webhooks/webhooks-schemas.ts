import { Type, type Static } from 'typebox';
import { SINGLE_LINE_PATTERN } from '../core/field-rules.ts';

const EVENT_TYPES = ['proof.created', 'webhook.test'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

const DateTime = Type.String({ format: 'date-time' });

export const Webhook = Type.Object(
  {
    id: Type.String(),
    accountId: Type.String(),
    name: Type.String(),
    url: Type.String({ format: 'uri' }),
    events: Type.Array(Type.String()),
    status: Type.Union([Type.Literal('active'), Type.Literal('disabled')]),
    createdAt: DateTime,
    updatedAt: DateTime,
  },
  { $id: 'Webhook', additionalProperties: false },
);
export type Webhook = Static<typeof Webhook>;

export const Delivery = Type.Object(
  {
    id: Type.String(),
    webhookId: Type.String(),
    eventId: Type.String(),
    eventType: Type.String(),
    attempt: Type.Integer({ minimum: 1 }),
    trigger: Type.Union([Type.Literal('scheduled'), Type.Literal('test')]),
    url: Type.String(),
    status: Type.Union([Type.Literal('succeeded'), Type.Literal('failed')]),
    responseStatus: Type.Union([Type.Integer(), Type.Null()]),
    durationMs: Type.Integer(),
    error: Type.Union([Type.String(), Type.Null()], {
      description: 'Why no 2xx came: http_<status>, timeout, connection_failed, blocked_address …',
    }),
    responseExcerpt: Type.Union([Type.String(), Type.Null()], {
      description: 'At most 1 KiB of the answer.',
    }),
    createdAt: DateTime,
    nextAttemptAt: Type.Union([DateTime, Type.Null()], {
      description: 'When the next retry is due; null if none.',
    }),
  },
  { $id: 'Delivery', additionalProperties: false },
);
export type Delivery = Static<typeof Delivery>;

export const CreateWebhookBody = Type.Object(
  {
    url: Type.String({ minLength: 1, maxLength: 2048, description: 'An https: URL on a public address.' }),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 120, pattern: SINGLE_LINE_PATTERN })),
    events: Type.Optional(
      Type.Array(Type.Union(EVENT_TYPES.map((e) => Type.Literal(e))), {
        minItems: 1,
        uniqueItems: true,
        description: 'Default ["proof.created"].',
      }),
    ),
  },
  { additionalProperties: false },
);
export type CreateWebhookBody = Static<typeof CreateWebhookBody>;

export const WebhookCreated = Type.Object({
  ok: Type.Boolean(),
  webhook: Type.Ref('Webhook'),
  secret: Type.String({ description: 'The signing secret (whsec_…). Shown this once: store it now.' }),
});

export const WebhookList = Type.Object({
  ok: Type.Boolean(),
  webhooks: Type.Array(
    Type.Object({ webhook: Type.Ref('Webhook'), recentDeliveries: Type.Array(Type.Ref('Delivery')) }),
  ),
});

export const TestDelivery = Type.Object({ ok: Type.Boolean(), delivery: Type.Ref('Delivery') });
