/**
 * Tells a database that cannot serve right now (disk full, I/O error, locked, connection lost) from a
 * bug. The first is the caller's to retry (503 + Retry-After); the second is a 500.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { code?: unknown; errcode?: unknown; message?: unknown };
  if (e.code === 'ERR_SQLITE_ERROR' && typeof e.errcode === 'number') {
    // Primary result codes (the low byte): BUSY 5, LOCKED 6, NOMEM 7, READONLY 8, IOERR 10, FULL 13, CANTOPEN 14.
    return [5, 6, 7, 8, 10, 13, 14].includes(e.errcode & 0xff);
  }
  if (
    e.code === 'ERR_INVALID_STATE' &&
    typeof e.message === 'string' &&
    /database is not open/i.test(e.message)
  ) {
    return true;
  }
  if (typeof e.code === 'string') {
    // Network failures, a flush of the SQLite log that the disk refused, and PostgreSQL classes 08
    // (connection), 53 (resources), 57P (shutdown).
    return (
      ['EIO', 'ENOSPC', 'EDQUOT', 'EROFS'].includes(e.code) ||
      ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN'].includes(e.code) ||
      /^(08|53|57P)/.test(e.code)
    );
  }
  return (
    typeof e.message === 'string' &&
    /Connection terminated|timeout exceeded when trying to connect/i.test(e.message)
  );
}
