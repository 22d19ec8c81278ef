import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatShare } from './dashboard-page.ts';

test('the share of a way of creating proofs: one proof among hundreds is not 0 %, nor are the rest 100 %', () => {
  assert.equal(formatShare(1, 300), '<1%');
  assert.equal(formatShare(299, 300), '>99%');
  assert.equal(formatShare(1, 1), '100%');
  assert.equal(formatShare(0, 300), '0%');
  assert.equal(formatShare(0, 0), '0%');
  assert.equal(formatShare(1, 3), '33%');
  assert.equal(formatShare(1, 150), '1%');
});
