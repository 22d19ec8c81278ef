/** The rules of the fields a caller sends, shared by the service's schemas and the command line. */

/** A content hash: `sha256:` and 64 hexadecimal digits (either case). */
export const CONTENT_HASH_PATTERN = '^sha256:[a-fA-F0-9]{64}$';

/** A hash as the service stores and answers it: `sha256:` and 64 lowercase hexadecimal digits. */
export const STORED_HASH_PATTERN = '^sha256:[a-f0-9]{64}$';

/** One line of text: no C0 control characters or DEL (they cannot be shown, and PostgreSQL refuses NUL). */
export const SINGLE_LINE_PATTERN = '^[^\\u0000-\\u001F\\u007F]*$';

/** The longest label, in characters. */
export const LABEL_MAX_LENGTH = 120;
