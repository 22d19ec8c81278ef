import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { canonicalJson, nestsDeeperThan } from './canonical-json.ts';

test('RFC 8785 §3.2.2 sample canonicalizes to the published output', () => {
  const input = JSON.parse(
    '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],' +
      '"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}',
  );
  assert.equal(
    canonicalJson(input),
    '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' +
      '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
  );
});

test('keys sort by UTF-16 code units at every depth', () => {
  assert.equal(
    canonicalJson({ b: { z: 1, a: 2 }, a: [{ y: 1, x: 2 }] }),
    '{"a":[{"x":2,"y":1}],"b":{"a":2,"z":1}}',
  );
  // "\u20ac" (U+20AC) sorts before "\ud83d\ude00" (a surrogate pair starting at 0xD83D)
  assert.equal(canonicalJson({ '\u{1F600}': 1, '\u20ac': 2 }), '{"€":2,"😀":1}');
});

test('key order of the input never changes the output', () => {
  fc.assert(
    fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (obj) => {
      const reversed = Object.fromEntries(Object.entries(obj).reverse());
      assert.equal(canonicalJson(reversed), canonicalJson(obj));
      assert.deepEqual(JSON.parse(canonicalJson(obj)), JSON.parse(JSON.stringify(obj)));
    }),
  );
});

test('values JSON cannot represent are refused, not silently dropped', () => {
  assert.throws(() => canonicalJson({ a: undefined }), /undefined/);
  assert.throws(() => canonicalJson({ a: Number.NaN }), /non-finite/);
  assert.throws(() => canonicalJson([Infinity]), /non-finite/);
});

test('nesting depth is measured without recursion, even far past the call stack', () => {
  assert.equal(nestsDeeperThan(1, 0), false);
  assert.equal(nestsDeeperThan({}, 0), true);
  assert.equal(nestsDeeperThan({ a: [1, { b: 2 }] }, 3), false);
  assert.equal(nestsDeeperThan({ a: [1, { b: 2 }] }, 2), true);
  let deep: unknown = 1;
  for (let i = 0; i < 200_000; i++) deep = [deep];
  assert.equal(nestsDeeperThan(deep, 64), true);
  assert.equal(nestsDeeperThan(deep, 200_000), false);
});
