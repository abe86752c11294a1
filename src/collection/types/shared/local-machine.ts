import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { hostnameOf, identifierOf } from './host-names.js';

/**
 * The machine the collector runs on, as host facts name a machine. A server the collector reaches
 * over loopback runs here, and most servers say little of their machine: these facts fill in what
 * such a server leaves out, so that it is recognised as the machine other collectors see.
 */
export interface LocalMachine {
  hostname: string | null;
  /** systemd's (or D-Bus's) machine id: stable for the installed system, per machine. */
  machine_id: string | null;
  /** The firmware's (SMBIOS) product UUID: per machine, also across reinstalls; null in most containers and some VMs. */
  product_uuid: string | null;
}

export interface LocalMachineFiles {
  machineId: readonly string[];
  productUuid: readonly string[];
}

export const LOCAL_MACHINE_FILES: LocalMachineFiles = {
  // D-Bus's copy stands in where systemd is absent (some containers and older systems)
  machineId: ['/etc/machine-id', '/var/lib/dbus/machine-id'],
  productUuid: ['/sys/class/dmi/id/product_uuid'],
};

/** The first file of the list that can be read and holds something; null when none does. */
function firstReadable(paths: readonly string[]): string | null {
  for (const path of paths) {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      // absent, or readable by root only (product_uuid usually is): the next one, or none
      continue;
    }
    // systemd writes `uninitialized` until first boot completes: no id yet
    const id = identifierOf(text);
    if (id && id !== 'uninitialized') return id;
  }
  return null;
}

/** Reads the facts now, from the files given (tests point them elsewhere). */
export function readLocalMachine(files: LocalMachineFiles = LOCAL_MACHINE_FILES): LocalMachine {
  return {
    hostname: hostnameOf(hostname()),
    machine_id: firstReadable(files.machineId),
    product_uuid: firstReadable(files.productUuid),
  };
}

let cached: LocalMachine | undefined;

/** This machine's facts, read once: they do not change while the process runs. */
export function localMachine(): LocalMachine {
  cached ??= readLocalMachine();
  return cached;
}
