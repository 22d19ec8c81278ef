/**
 * Keccak-256: the Keccak sponge with the original submission's padding (domain byte 0x01), as Ethereum
 * and the OpenTimestamps `keccak256` operation use it. node:crypto offers SHA3-256, the same permutation
 * padded with 0x06, but not this one, so it is written here from FIPS 202 §3 (the permutation
 * Keccak-f[1600]) and §5.1 (pad10*1). Lanes are 64-bit words kept as two 32-bit halves: lane x + 5y at
 * 2(x + 5y) (low half) and 2(x + 5y) + 1 (high half). Only short messages are hashed (at most 4096 bytes).
 */

const RATE = 136; // bytes: 1600 − 2·256 bits
const ROUNDS = 24;

/** ρ offsets (FIPS 202 Algorithm 2) and π destinations (Algorithm 3) per lane, and the ι constants. */
const RHO = new Uint8Array(25);
const PI = new Uint8Array(25);
const IOTA = new Uint32Array(2 * ROUNDS);
{
  for (let t = 0, x = 1, y = 0; t < 24; t++) {
    RHO[x + 5 * y] = (((t + 1) * (t + 2)) / 2) % 64;
    [x, y] = [y, (2 * x + 3 * y) % 5];
  }
  // π moves lane (x, y) to (y, 2x + 3y).
  for (let x = 0; x < 5; x++) for (let y = 0; y < 5; y++) PI[x + 5 * y] = y + 5 * ((2 * x + 3 * y) % 5);
  // rc(t) (Algorithm 5): an 8-bit LFSR over x^8 + x^6 + x^5 + x^4 + 1, read at t = 0, 1, 2, …; round i
  // sets bit 2^j − 1 of its constant to rc(j + 7i) (Algorithm 6).
  let lfsr = 1;
  for (let round = 0; round < ROUNDS; round++) {
    for (let j = 0; j < 7; j++) {
      if (lfsr & 1) {
        const bit = 2 ** j - 1;
        IOTA[2 * round + (bit >= 32 ? 1 : 0)]! |= 1 << (bit % 32);
      }
      lfsr <<= 1;
      if (lfsr & 0x100) lfsr ^= 0x171;
    }
  }
}

/** Sets out[at], out[at + 1] to the lane (lo, hi) rotated left by n bits. */
function rotate(out: Uint32Array, at: number, lo: number, hi: number, n: number): void {
  if (n >= 32) [lo, hi, n] = [hi, lo, n - 32];
  out[at] = n === 0 ? lo : (lo << n) | (hi >>> (32 - n));
  out[at + 1] = n === 0 ? hi : (hi << n) | (lo >>> (32 - n));
}

function permute(a: Uint32Array): void {
  const c = new Uint32Array(10);
  const d = new Uint32Array(10);
  const b = new Uint32Array(50);
  for (let round = 0; round < ROUNDS; round++) {
    // θ
    for (let x = 0; x < 5; x++) {
      c[2 * x] = a[2 * x]! ^ a[2 * x + 10]! ^ a[2 * x + 20]! ^ a[2 * x + 30]! ^ a[2 * x + 40]!;
      c[2 * x + 1] = a[2 * x + 1]! ^ a[2 * x + 11]! ^ a[2 * x + 21]! ^ a[2 * x + 31]! ^ a[2 * x + 41]!;
    }
    for (let x = 0; x < 5; x++) {
      const left = 2 * ((x + 4) % 5);
      const right = 2 * ((x + 1) % 5);
      rotate(d, 2 * x, c[right]!, c[right + 1]!, 1);
      d[2 * x]! ^= c[left]!;
      d[2 * x + 1]! ^= c[left + 1]!;
    }
    for (let lane = 0; lane < 25; lane++) {
      a[2 * lane]! ^= d[2 * (lane % 5)]!;
      a[2 * lane + 1]! ^= d[2 * (lane % 5) + 1]!;
    }
    // ρ and π
    for (let lane = 0; lane < 25; lane++)
      rotate(b, 2 * PI[lane]!, a[2 * lane]!, a[2 * lane + 1]!, RHO[lane]!);
    // χ
    for (let y = 0; y < 25; y += 5) {
      for (let x = 0; x < 5; x++) {
        const here = 2 * (y + x);
        const next = 2 * (y + ((x + 1) % 5));
        const after = 2 * (y + ((x + 2) % 5));
        a[here] = b[here]! ^ (~b[next]! & b[after]!);
        a[here + 1] = b[here + 1]! ^ (~b[next + 1]! & b[after + 1]!);
      }
    }
    // ι
    a[0]! ^= IOTA[2 * round]!;
    a[1]! ^= IOTA[2 * round + 1]!;
  }
}

export function keccak256(message: Uint8Array): Buffer {
  const blocks = Math.floor(message.length / RATE) + 1;
  const padded = Buffer.alloc(blocks * RATE);
  padded.set(message);
  padded[message.length]! ^= 0x01;
  padded[padded.length - 1]! ^= 0x80;
  const state = new Uint32Array(50);
  for (let at = 0; at < padded.length; at += RATE) {
    for (let word = 0; word < RATE / 4; word++) state[word]! ^= padded.readUInt32LE(at + 4 * word);
    permute(state);
  }
  const out = Buffer.alloc(32);
  for (let word = 0; word < 8; word++) out.writeUInt32LE(state[word]!, 4 * word);
  return out;
}
