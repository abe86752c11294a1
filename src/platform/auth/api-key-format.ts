import { createHmac, randomInt } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { derivedKey } from '../config/derived-key.js';
import type { Tier } from './principal.js';

const PRODUCT_TAG = 'cinv';
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
// 30 base62 characters carry 178 bits of randomness
const RANDOM_LENGTH = 30;
const CHECKSUM_LENGTH = 6;
const KEY_PATTERN = /^cinv_(adm|svc|ro|usr)_([0-9A-Za-z]{30})([0-9A-Za-z]{6})$/;

export const TIERS: readonly Tier[] = ['adm', 'svc', 'ro', 'usr'];

function base62(value: number, width: number): string {
  let out = '';
  let rest = value;
  for (let i = 0; i < width; i++) {
    out = ALPHABET[rest % 62] + out;
    rest = Math.floor(rest / 62);
  }
  return out;
}

function checksum(body: string): string {
  return base62(crc32(body), CHECKSUM_LENGTH);
}

/**
 * A new key: `cinv_<tier>_<30 random base62><6 checksum>`. The fixed prefix and the CRC32 checksum
 * let secret scanners recognise real keys, and let the server reject typos without a lookup.
 */
export function generateApiKey(tier: Tier): string {
  let random = '';
  for (let i = 0; i < RANDOM_LENGTH; i++) random += ALPHABET[randomInt(62)];
  const body = `${PRODUCT_TAG}_${tier}_${random}`;
  return body + checksum(body);
}

/** The tier of a well-formed key with a valid checksum, otherwise undefined. */
export function parseApiKey(key: string): { tier: Tier } | undefined {
  const match = KEY_PATTERN.exec(key);
  if (!match) return undefined;
  const [, tier, random, sum] = match;
  if (checksum(`${PRODUCT_TAG}_${tier}_${random}`) !== sum) return undefined;
  return { tier: tier as Tier };
}

const hashingKey = (secret: string): Buffer => derivedKey(secret, 'cinv api key hashing v1');

/**
 * The stored form of a key: HMAC-SHA256 under a key derived from the service secret. Lookups go by
 * this digest through a unique index, so no stored secret is ever compared byte by byte.
 */
export function hashApiKey(secret: string, key: string): Buffer {
  return createHmac('sha256', hashingKey(secret)).update(key).digest();
}

/** The last characters, shown in listings so people can tell keys apart. */
export const keyHint = (key: string): string => key.slice(-4);
