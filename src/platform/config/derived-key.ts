import { createHmac } from 'node:crypto';

const derived = new Map<string, Buffer>();

/**
 * A key for one purpose (key hashing, cursor signing ...), derived from the service secret with
 * HMAC-SHA256 so that the purposes never share key material; computed once per secret and purpose.
 */
export function derivedKey(secret: string, purpose: string): Buffer {
  const id = `${purpose}\u0000${secret}`;
  let key = derived.get(id);
  if (!key) {
    key = createHmac('sha256', secret).update(purpose).digest();
    derived.set(id, key);
  }
  return key;
}
