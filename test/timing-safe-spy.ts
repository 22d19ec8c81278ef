import crypto from 'node:crypto';
import { syncBuiltinESMExports } from 'node:module';

/**
 * Runs `run` while every call of crypto.timingSafeEqual, from any module (ES named imports of
 * node:crypto included, through syncBuiltinESMExports), is recorded with the byte lengths it compared.
 */
export async function recordTimingSafeEqual<T>(
  run: () => T | Promise<T>,
): Promise<{ result: T; calls: [number, number][] }> {
  const original = crypto.timingSafeEqual;
  const calls: [number, number][] = [];
  crypto.timingSafeEqual = (a, b) => {
    calls.push([a.byteLength, b.byteLength]);
    return original(a, b);
  };
  syncBuiltinESMExports();
  try {
    return { result: await run(), calls };
  } finally {
    crypto.timingSafeEqual = original;
    syncBuiltinESMExports();
  }
}
