/**
 * The signing keys directory as the tools beside the service work on it (`hashproof keys`, `backup`,
 * `restore`): its keys as they are on disk (the keyring creates and rotates them), which names are
 * key files, the error of a key file others may read, and the public manifest of its keys. The rest
 * of keys/ stays inside it.
 */
export { isKeyFileName, KeyFileModeError, readHmacKeys, readLogKey, readReceiptKeys } from './key-files.ts';
export { keyManifest } from './key-manifest.ts';
