import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

const firstOf = (...paths: string[]): string | null => {
  for (const at of paths) {
    try {
      const text = readFileSync(at, 'utf8').trim().toLowerCase();
      if (text) return text;
    } catch {
      // unreadable here: the next
    }
  }
  return null;
};

/**
 * The host facts of the machine the tests run on, read from the system itself (not through the
 * collector's module): what a server reached over loopback is expected to be recorded with.
 */
export function thisMachine(): { hostname: string | null; machine_id: string | null; product_uuid: string | null } {
  const name = hostname().toLowerCase().replace(/\.+$/, '');
  return {
    hostname: name && name !== 'localhost' ? name : null,
    machine_id: firstOf('/etc/machine-id', '/var/lib/dbus/machine-id'),
    product_uuid: firstOf('/sys/class/dmi/id/product_uuid'),
  };
}
