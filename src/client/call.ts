/** How one request of the client (`createClient`) is asked for. */
export interface CallOptions {
  body?: unknown;
  headers?: Record<string, string>;
  /** Safe to send twice; by default only a GET is. */
  isIdempotent?: boolean;
  /** How a successful answer is read: JSON (the default), text, or bytes (a Buffer). */
  as?: 'json' | 'text' | 'bytes';
  /** The most bytes the answer's body may hold (`ANSWER_CAPS`; 16 MiB by default). */
  maxBytes?: number;
  /** The form a JSON answer must have; one that fails it is `malformed_answer`. */
  isValid?: (answer: unknown) => boolean;
}

/** One request of the client, answered as `T`. */
export type Call = <T>(method: string, path: string, options?: CallOptions) => Promise<T>;

/** A path segment of an id, encoded. */
export const encodeId = (value: string): string => encodeURIComponent(value);
