/**
 * SHOW GRANTS lines as the inventory keeps them: without the authentication clause, whose
 * `IDENTIFIED BY PASSWORD '*…'` / `IDENTIFIED VIA plugin USING '…'` carries the account's password
 * hash, and the roles a line grants.
 */

/** Where a quoted string or identifier that starts at `start` ends (the index after its closing quote). */
function quotedEnd(text: string, start: number): number {
  const quote = text[start]!;
  let i = start + 1;
  while (i < text.length) {
    if (text[i] === '\\' && quote !== '`') i += 2;
    else if (text[i] === quote && text[i + 1] === quote) i += 2;
    else if (text[i] === quote) return i + 1;
    else i++;
  }
  return text.length;
}

/** The words of a line outside quotes, with where each starts and ends; quoted parts are words of their own. */
function words(text: string): { word: string; start: number; end: number }[] {
  const out: { word: string; start: number; end: number }[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const start = i;
    if (c === "'" || c === '"' || c === '`') i = quotedEnd(text, i);
    else while (i < text.length && !/[\s'"`]/.test(text[i]!)) i++;
    out.push({ word: text.slice(start, i), start, end: i });
  }
  return out;
}

/** What follows an authentication clause: the rest of the line is kept from these. */
const AFTER_AUTHENTICATION = /^(REQUIRE|WITH)$/i;
const HASH = /\*[0-9A-F]{40}|\$[A-Z0-9]\$[^\s']{20,}/gi;

/** A grant line without any authentication clause, nor anything shaped like a password hash. */
export function withoutSecrets(line: string): string {
  const parts = words(line);
  const at = parts.findIndex((p) => /^IDENTIFIED$/i.test(p.word));
  let out = line;
  if (at >= 0) {
    // the word after IDENTIFIED (BY, VIA, WITH) belongs to the clause, whatever it is
    let next = at + 2;
    while (next < parts.length && !AFTER_AUTHENTICATION.test(parts[next]!.word)) next++;
    const end = next < parts.length ? parts[next]!.start : line.length;
    out = (line.slice(0, parts[at]!.start).trimEnd() + ' ' + line.slice(end)).trim();
  }
  return out.replace(HASH, '');
}

/** An identifier as SHOW GRANTS quotes it, unquoted. */
function unquoted(word: string): string {
  return word.startsWith('`') ? word.slice(1, -1).replace(/``/g, '`') : word;
}

/**
 * The roles a `GRANT role[, role] TO grantee` line grants (a privilege grant names privileges,
 * never a quoted identifier, first). MySQL writes a role as an account, `role`@`host`.
 */
export function grantedRoles(line: string): string[] {
  if (!/^GRANT\s+`/i.test(line)) return [];
  const roles: string[] = [];
  let i = line.indexOf('`');
  while (i >= 0 && i < line.length) {
    const end = quotedEnd(line, i);
    let role = unquoted(line.slice(i, end));
    i = end;
    if (line[i] === '@' && line[i + 1] === '`') {
      const hostEnd = quotedEnd(line, i + 1);
      role += `@${unquoted(line.slice(i + 1, hostEnd))}`;
      i = hostEnd;
    }
    roles.push(role);
    const rest = line.slice(i).match(/^\s*,\s*/);
    if (!rest) break;
    i += rest[0].length;
    if (line[i] !== '`') break;
  }
  return roles;
}
