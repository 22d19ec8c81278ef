import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hostOf } from './urls.ts';

test('hostOf names a URL by its host and port, and leaves what is no URL as it is', () => {
  assert.equal(hostOf('https://freetsa.org/tsr'), 'freetsa.org');
  assert.equal(hostOf('http://127.0.0.1:8080/tsa'), '127.0.0.1:8080');
  assert.equal(hostOf('not a url'), 'not a url');
});
